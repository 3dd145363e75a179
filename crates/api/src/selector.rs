//! Label and field selectors: upstream's grammar, matching and error messages.
