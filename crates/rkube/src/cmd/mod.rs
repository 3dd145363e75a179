pub mod agent;
pub mod components;
pub mod image;
pub mod server;
pub mod simnodes;
