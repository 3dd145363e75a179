pub mod agent;
pub mod components;
pub mod image;
mod memory;
pub mod server;
pub mod simnodes;
