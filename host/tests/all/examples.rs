//! Example plugins, called through the host.
