//! Server-side apply: field sets, managedFields and ownership, apply and conflicts.
