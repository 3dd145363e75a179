//! Admission policies evaluated in the server (upstream's
//! `k8s.io/apiserver/pkg/admission/plugin/policy`).

pub mod cel;
pub mod validating;
pub mod validation;
