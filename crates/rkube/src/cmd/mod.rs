pub mod components;
pub mod server;
pub mod simnodes;
