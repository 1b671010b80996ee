//! atomic: TODO
