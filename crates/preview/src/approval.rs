//! What a preview_open call will run, for its approval prompt: its arguments are `{}` and say
//! nothing, so a front end that asks the user shows this instead.

use std::path::Path;

use crate::PreviewConfig;
use crate::detect::{self, Server};

/// The name of the tool whose approval [`approval_detail`] explains.
const PREVIEW_OPEN: &str = "preview_open";

/// For an approval of `tool` in `root`: what it will run, when it is preview_open (else `None`).
pub fn approval_detail(tool: &str, root: &Path, config: &PreviewConfig) -> Option<String> {
    (tool == PREVIEW_OPEN).then(|| plan_summary(root, config))
}

/// What preview_open will run in `root` under `config`, one line each, for its approval (the
/// call's arguments are `{}` and say nothing): the typecheck and build commands and what serves
/// the app, as the preview would plan them now, and where the plan came from. Cheap: a `stat` or
/// two and `package.json`.
pub fn plan_summary(root: &Path, config: &PreviewConfig) -> String {
    let plan = match detect::plan(root, config) {
        Ok(plan) => plan,
        Err(_) => return "(no preview found in the project: it will say what to configure)".into(),
    };
    let mut lines = vec![match plan.kind {
        detect::ProjectKind::Configured => "runs, from the user's [preview] settings:".to_owned(),
        kind => format!("runs, as detected for a {} project:", kind.word()),
    }];
    if let Some(typecheck) = &plan.typecheck {
        lines.push(format!("typecheck: {typecheck}"));
    }
    if let Some(build) = &plan.build {
        lines.push(format!("build: {build}"));
    }
    lines.push(match &plan.server {
        Server::Command(command) => format!("serve: {command}"),
        Server::Static(dir) => format!("serve: the built-in static server over {}", dir.display()),
    });
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_open_is_asked_about_with_what_it_runs() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("index.html"), "<p>hi</p>").unwrap();
        let mut config = PreviewConfig::default();
        assert_eq!(
            plan_summary(tmp.path(), &config),
            "runs, as detected for a static project:\nserve: the built-in static server over ."
        );
        config.build = "make site".into();
        config.serve = "npm start -- --port {port}".into();
        assert_eq!(
            plan_summary(tmp.path(), &config),
            "runs, from the user's [preview] settings:\nbuild: make site\nserve: npm start -- \
             --port {port}"
        );
    }

    #[test]
    fn only_preview_open_has_a_detail() {
        let tmp = tempfile::tempdir().unwrap();
        let config = PreviewConfig::default();
        assert!(approval_detail("preview_open", tmp.path(), &config).is_some());
        assert_eq!(approval_detail("bash", tmp.path(), &config), None);
    }
}
