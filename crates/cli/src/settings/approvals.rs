//! The approval each front end uses, for `hands config show`: `hands run`, `hands chat` and
//! `hands acp` ask unless a layer sets `approval`; `hands serve`, `hands mcp` and `hands call` use
//! the setting as it is (`auto` by default). A plan is asked about under either, wherever somebody
//! can answer.

use hands_core::config::Approval;

/// The comment block that says which approval each front end uses and where it came from:
/// `approval` is `approval` as loaded, `source` where it came from (`default` when no layer
/// set it).
pub fn render(approval: Approval, source: &str) -> String {
    let set = source != "default";
    let word = |a: Approval| match a {
        Approval::Ask => "ask",
        Approval::Auto => "auto",
    };
    let agent = if set {
        format!("{} (approval, from {source})", word(approval))
    } else {
        "ask (their default: approval is not set)".to_owned()
    };
    let others = if set {
        format!("{} (approval, from {source})", word(approval))
    } else {
        format!("{} (approval's default)", word(approval))
    };
    format!(
        "\n# approval by front end (a plan from exit_plan_mode is asked about under both, \
         wherever somebody can answer):\n\
         #   hands run, hands chat, hands acp: {agent}\n\
         #   hands serve (session API, web UI): {others}\n\
         #   hands mcp, hands call: {others}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 34, item 9: `hands config show` said `approval = "auto"` while `hands run` asked.
    #[test]
    fn each_front_end_shows_its_approval_and_where_it_came_from() {
        let unset = render(Approval::Auto, "default");
        assert!(unset.contains("hands run, hands chat, hands acp: ask (their default"), "{unset}");
        assert!(unset.contains("hands serve (session API, web UI): auto (approval's default)"));
        let set = render(Approval::Auto, "/home/u/.config/hands/config.toml");
        assert!(set.contains("hands acp: auto (approval, from /home/u/.config/hands/config.toml)"));
        assert!(set.contains("hands mcp, hands call: auto (approval, from /home/u/.config"));
    }
}
