//! Validation of names, labels, annotations and object metadata, with upstream's messages.
