//! validation (to be written).
