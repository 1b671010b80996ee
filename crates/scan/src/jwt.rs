//! Supabase `service_role` keys: JWTs (`eyJ….eyJ….sig`) whose payload says
//! `"role": "service_role"`. The anon key has the same shape and is public, so a JWT counts only
//! when its decoded payload names that role.

use base64::Engine as _;

/// Where each service_role JWT in `content` starts.
pub fn service_role_tokens(content: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = memchr::memmem::find(&content[from..], b"eyJ") {
        let start = from + at;
        let end = start
            + content[start..]
                .iter()
                .position(|&b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.'))
                .unwrap_or(content.len() - start);
        if start == 0 || !is_token_byte(content[start - 1]) {
            let token = &content[start..end];
            if is_service_role(token) {
                found.push(start);
            }
        }
        from = end.max(start + 3);
    }
    found
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_service_role(token: &[u8]) -> bool {
    let mut parts = token.split(|&b| b == b'.');
    let (Some(_), Some(payload), Some(signature)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    if signature.is_empty() || payload.len() > 4096 {
        return false;
    }
    let Ok(json) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload) else {
        return false;
    };
    serde_json::from_slice::<serde_json::Value>(&json)
        .is_ok_and(|claims| claims.get("role").and_then(|r| r.as_str()) == Some("service_role"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.c2lnbmF0dXJl", b64(r#"{"alg":"HS256","typ":"JWT"}"#), b64(claims))
    }

    #[test]
    fn only_the_service_role_counts() {
        let service = jwt(r#"{"iss":"supabase","role":"service_role"}"#);
        let anon = jwt(r#"{"iss":"supabase","role":"anon"}"#);
        let text = format!("const a = '{anon}';\nconst s = \"{service}\";\n");
        let found = service_role_tokens(text.as_bytes());
        assert_eq!(found, [text.find(&service).unwrap()]);
        assert!(service_role_tokens(b"eyJ eyJhbGci.eyJ.x").is_empty());
    }
}
