//! Paths of built plugins.
