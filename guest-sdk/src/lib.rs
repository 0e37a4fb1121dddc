//! The toolhost guest SDK.
