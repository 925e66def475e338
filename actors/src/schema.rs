//! schema (to be written).
