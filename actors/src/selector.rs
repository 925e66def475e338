//! Label and field selectors (placeholder until implemented).
