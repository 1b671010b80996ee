//! The address classifier: which addresses are this machine's own network (or nobody's), so that a
//! fetch never reaches them unless the user allows the host.
//!
//! [`classify`] looks only at the address; IPv6 forms that carry an IPv4 address (mapped,
//! compatible, NAT64, 6to4) are judged by the address they carry. The user's exceptions are
//! applied by `allow.rs`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forbidden {
    /// 127.0.0.0/8, ::1: this machine.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, fec0::/10 (site-local): a private network.
    Private,
    /// 100.64/10: carrier-grade NAT, a provider's private network.
    SharedAddressSpace,
    /// 169.254/16 (cloud metadata lives at 169.254.169.254), fe80::/10.
    LinkLocal,
    /// fc00::/7.
    UniqueLocal,
    /// 224/4, ff00::/8.
    Multicast,
    /// 0.0.0.0/8, `::`: "this host" (connecting to it reaches this machine).
    Unspecified,
    /// 255.255.255.255.
    Broadcast,
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20: for examples only.
    Documentation,
    /// 198.18/15: network benchmarking.
    Benchmarking,
    /// 240/4, 192.0.0/24, 192.88.99/24, 100::/64, 2001::/23, 64:ff9b:1::/48: reserved, not
    /// a public host.
    Reserved,
}

impl Forbidden {
    fn describe(self) -> &'static str {
        match self {
            Self::Loopback => "a loopback address (this machine)",
            Self::Private => "a private network address",
            Self::SharedAddressSpace => "a carrier-grade NAT address (100.64.0.0/10)",
            Self::LinkLocal => "a link-local address (where cloud metadata services live)",
            Self::UniqueLocal => "a unique-local IPv6 address (a private network)",
            Self::Multicast => "a multicast address",
            Self::Unspecified => "the unspecified address (this machine)",
            Self::Broadcast => "the broadcast address",
            Self::Documentation => "a documentation address (not a real host)",
            Self::Benchmarking => "a benchmarking address (not a public host)",
            Self::Reserved => "a reserved address (not a public host)",
        }
    }
}

impl fmt::Display for Forbidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Why `addr` must not be fetched from, or `None` for a public address.
pub fn classify(addr: IpAddr) -> Option<Forbidden> {
    match addr {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(addr: Ipv4Addr) -> Option<Forbidden> {
    let [a, b, c, _] = addr.octets();
    let forbidden = match (a, b, c) {
        (0, _, _) => Forbidden::Unspecified,
        (10, _, _) => Forbidden::Private,
        (100, 64..=127, _) => Forbidden::SharedAddressSpace,
        (127, _, _) => Forbidden::Loopback,
        (169, 254, _) => Forbidden::LinkLocal,
        (172, 16..=31, _) => Forbidden::Private,
        (192, 0, 0) | (192, 88, 99) => Forbidden::Reserved,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Forbidden::Documentation,
        (192, 168, _) => Forbidden::Private,
        (198, 18..=19, _) => Forbidden::Benchmarking,
        (224..=239, _, _) => Forbidden::Multicast,
        _ if addr == Ipv4Addr::BROADCAST => Forbidden::Broadcast,
        (240..=255, _, _) => Forbidden::Reserved,
        _ => return None,
    };
    Some(forbidden)
}

fn classify_v6(addr: Ipv6Addr) -> Option<Forbidden> {
    if addr.is_unspecified() {
        return Some(Forbidden::Unspecified);
    }
    if addr.is_loopback() {
        return Some(Forbidden::Loopback);
    }
    if let Some(v4) = embedded_v4(addr) {
        return classify_v4(v4);
    }
    let s = addr.segments();
    let forbidden = match s[0] {
        0x0064 if s[1] == 0xff9b && s[2] == 0x0001 => Forbidden::Private,
        0x0000..=0x00ff => Forbidden::Reserved,
        0x0100 if s[1..4] == [0, 0, 0] => Forbidden::Reserved,
        0x2001 if s[1] == 0x0db8 => Forbidden::Documentation,
        0x2001 if s[1] < 0x0200 => Forbidden::Reserved,
        0x3fff if s[1] < 0x1000 => Forbidden::Documentation,
        0xfc00..=0xfdff => Forbidden::UniqueLocal,
        0xfe80..=0xfebf => Forbidden::LinkLocal,
        0xfec0..=0xfeff => Forbidden::Private,
        0xff00..=0xffff => Forbidden::Multicast,
        _ => return None,
    };
    Some(forbidden)
}

/// The IPv4 address an IPv6 address stands for: IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
/// `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::`.
fn embedded_v4(addr: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = addr.segments();
    let tail = |hi: u16, lo: u16| Ipv4Addr::from(((hi as u32) << 16) | lo as u32);
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] => Some(tail(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(tail(hi, lo)),
        [0x2002, hi, lo, ..] => Some(tail(hi, lo)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_table_of_addresses() {
        use Forbidden::*;
        let table: &[(&str, Option<Forbidden>)] = &[
            ("127.0.0.1", Some(Loopback)),
            ("127.0.0.2", Some(Loopback)),
            ("127.255.255.254", Some(Loopback)),
            ("10.0.0.1", Some(Private)),
            ("10.255.255.255", Some(Private)),
            ("172.16.0.1", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("172.15.255.255", None),
            ("172.32.0.0", None),
            ("192.168.1.1", Some(Private)),
            ("192.169.0.1", None),
            ("169.254.169.254", Some(LinkLocal)),
            ("169.254.0.1", Some(LinkLocal)),
            ("100.64.0.1", Some(SharedAddressSpace)),
            ("100.127.255.255", Some(SharedAddressSpace)),
            ("100.63.255.255", None),
            ("100.128.0.0", None),
            ("0.0.0.0", Some(Unspecified)),
            ("0.1.2.3", Some(Unspecified)),
            ("255.255.255.255", Some(Broadcast)),
            ("224.0.0.1", Some(Multicast)),
            ("239.255.255.250", Some(Multicast)),
            ("240.0.0.1", Some(Reserved)),
            ("192.0.0.8", Some(Reserved)),
            ("192.88.99.1", Some(Reserved)),
            ("192.0.2.1", Some(Documentation)),
            ("198.51.100.7", Some(Documentation)),
            ("203.0.113.9", Some(Documentation)),
            ("198.18.0.1", Some(Benchmarking)),
            ("198.19.255.255", Some(Benchmarking)),
            ("198.20.0.0", None),
            ("1.1.1.1", None),
            ("8.8.8.8", None),
            ("93.184.216.34", None),
            ("::", Some(Unspecified)),
            ("::1", Some(Loopback)),
            ("fe80::1", Some(LinkLocal)),
            ("febf::1", Some(LinkLocal)),
            ("fec0::1", Some(Private)),
            ("fc00::1", Some(UniqueLocal)),
            ("fd12:3456::1", Some(UniqueLocal)),
            ("ff02::1", Some(Multicast)),
            ("2001:db8::1", Some(Documentation)),
            ("3fff::1", Some(Documentation)),
            ("2001::1", Some(Reserved)),
            ("100::1", Some(Reserved)),
            ("64:ff9b:1::1", Some(Private)),
            // IPv4 inside IPv6: judged by the IPv4 address.
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:7f00:1", Some(Loopback)),
            ("::ffff:10.0.0.1", Some(Private)),
            ("::ffff:169.254.169.254", Some(LinkLocal)),
            ("::ffff:8.8.8.8", None),
            ("::127.0.0.1", Some(Loopback)),
            ("::10.1.2.3", Some(Private)),
            ("64:ff9b::127.0.0.1", Some(Loopback)),
            ("64:ff9b::a9fe:a9fe", Some(LinkLocal)),
            ("64:ff9b::8.8.8.8", None),
            ("2002:7f00:1::", Some(Loopback)),
            ("2002:c0a8:101::1", Some(Private)),
            ("2002:0808:0808::1", None),
            ("2606:4700:4700::1111", None),
            ("2a00:1450:4001:80b::200e", None),
        ];
        for (text, expected) in table {
            assert_eq!(classify(ip(text)), *expected, "{text}");
        }
    }
}
