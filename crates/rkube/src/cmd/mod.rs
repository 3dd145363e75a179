pub mod agent;
pub mod components;
pub mod image;
pub mod leader;
mod memory;
pub mod server;
pub mod simnodes;
