//! Services a tool crate installs beside its tools for front ends to use (exec's
//! [`crate::ProcessService`]): a map from type to one value, so that core knows no service of
//! another crate. Kept on the [`crate::Registry`], which every front end already holds.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// One value per type.
#[derive(Clone, Default)]
pub struct Services(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services").field("len", &self.0.len()).finish()
    }
}

impl Services {
    /// Install `value`, replacing an earlier one of the same type.
    pub fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// A copy of the installed `T`, if any.
    pub fn get<T: Clone + 'static>(&self) -> Option<T> {
        self.0.get(&TypeId::of::<T>()).and_then(|v| v.downcast_ref::<T>()).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_type_the_latest_wins() {
        let mut services = Services::default();
        assert_eq!(services.get::<u32>(), None);
        services.insert(1_u32);
        services.insert(2_u32);
        services.insert(String::from("x"));
        assert_eq!(services.get::<u32>(), Some(2));
        assert_eq!(services.get::<String>().as_deref(), Some("x"));
        let shared: Arc<dyn Fn() -> u8 + Send + Sync> = Arc::new(|| 7);
        services.insert(shared);
        assert_eq!(services.get::<Arc<dyn Fn() -> u8 + Send + Sync>>().map(|f| f()), Some(7));
    }
}
