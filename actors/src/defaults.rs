//! defaults (to be written).
