//! walk: TODO
