//! The generic registry store (to be written).
