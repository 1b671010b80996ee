//! The tools' specs: names, read-only everywhere (plan mode and sub-agents), descriptions and
//! schemas as the model sees them.

use hands_core::{CoreConfig, Mode, Registry};

#[test]
fn the_code_tools_are_read_only_and_offered_in_plan_mode_and_to_subagents() {
    let registry = hands_code::register(
        Registry::builder(CoreConfig::default()),
        &Default::default(),
        &Default::default(),
    )
    .build();
    for name in hands_code::TOOLS {
        let plan = registry.list(Mode::Plan);
        let spec = plan
            .iter()
            .find(|s| s.name == *name)
            .unwrap_or_else(|| panic!("{name} not in plan mode"));
        assert!(spec.annotations.read_only, "{name}");
        assert!(spec.policy.subagent, "{name}");
        insta::assert_snapshot!(format!("description_{name}"), spec.description);
    }
}
