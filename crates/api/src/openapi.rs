//! The OpenAPI documents served at `/openapi/v2` and `/openapi/v3`.
