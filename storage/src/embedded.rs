//! The embedded backend (to be written).
