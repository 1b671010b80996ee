//! detect: TODO
