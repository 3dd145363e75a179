//! Outgoing webhooks: the HTTP(S) client ([`client`]), the admission webhooks' transport
//! ([`admission`]) and the authorization webhook ([`authorizer`]).

pub mod admission;
pub mod authorizer;
pub mod client;

pub use self::admission::HttpsTransport;
pub use self::authorizer::{WebhookAuthorizer, WebhookAuthzConfig};
