//! The one error type of `rkube kubectl`, printed as kubectl prints its errors.

use std::fmt;

/// A failure of a kubectl command: how it is printed and the exit code it gives.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The server answered with a `Status` failure (printed as
    /// `Error from server (<Reason>): <message>`).
    #[error("{}", api_message(.0))]
    Api(Box<ApiStatus>),
    /// A client-side failure, printed as `error: <message>`.
    #[error("error: {0}")]
    Msg(String),
    /// Bad usage of a command: printed as `error: <message>` followed by
    /// `See 'kubectl <cmd> -h' for help and examples`.
    #[error("error: {message}\nSee '{command} -h' for help and examples")]
    Usage { message: String, command: String },
    /// The connection to the server failed (unreachable, TLS, …).
    #[error("{0}")]
    Transport(String),
    /// A message already formatted as kubectl prints it (several lines of an aggregate,
    /// a composed server failure), printed as is.
    #[error("{0}")]
    Raw(String),
    /// Ends the command with this exit code, printing nothing more (e.g. `diff` found
    /// differences, or messages were already printed).
    #[error("")]
    Exit(i32),
    #[error("error: {0}")]
    Io(#[from] std::io::Error),
}

/// The parts of a `Status` failure kubectl prints.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiStatus {
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// The whole `Status` object as the server sent it.
    pub status: serde_json::Value,
}

/// kubectl's `checkErr` for a `Status` with reason `Invalid`: `The Kind "name" is invalid:`
/// and the de-duplicated causes (one on the line, several as `* ` lines).
fn invalid_message(s: &ApiStatus) -> String {
    let details = match s.status.get("details") {
        Some(d) if d.is_object() => d,
        _ => {
            return if s.message.is_empty() {
                "The request is invalid".to_string()
            } else {
                format!("The request is invalid: {}", s.message)
            };
        }
    };
    let field = |k: &str| details.get(k).and_then(|v| v.as_str()).unwrap_or_default();
    let mut causes: Vec<String> = Vec::new();
    for c in details
        .get("causes")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
    {
        let text = format!(
            "{}: {}",
            c.get("field").and_then(|v| v.as_str()).unwrap_or_default(),
            c.get("message")
                .and_then(|v| v.as_str())
                .unwrap_or_default()
        );
        if !causes.contains(&text) {
            causes.push(text);
        }
    }
    let mut head = "The request is invalid".to_string();
    if !field("kind").is_empty() || !field("name").is_empty() {
        head = format!("The {} {:?} is invalid", field("kind"), field("name"));
    } else if !s.message.is_empty() && causes.is_empty() {
        head = format!("{head}: {}", s.message);
    }
    match causes.len() {
        0 => head,
        1 => format!("{head}: {}", causes[0]),
        _ => {
            let mut out = format!("{head}: ");
            for c in &causes {
                out.push_str(&format!("\n* {c}"));
            }
            out
        }
    }
}

fn api_message(s: &ApiStatus) -> String {
    // kubectl's `StandardErrorMessage`.
    if s.reason == "Invalid" && s.status.is_object() {
        invalid_message(s)
    } else if s.reason == "Unauthorized" {
        format!("error: You must be logged in to the server ({})", s.message)
    } else if s.reason.is_empty() {
        format!("Error from server: {}", s.message)
    } else {
        format!("Error from server ({}): {}", s.reason, s.message)
    }
}

impl CliError {
    pub fn msg(m: impl fmt::Display) -> Self {
        CliError::Msg(m.to_string())
    }

    pub fn usage(command: impl Into<String>, message: impl Into<String>) -> Self {
        CliError::Usage {
            message: message.into(),
            command: command.into(),
        }
    }

    /// The process exit code for this failure (kubectl exits 1 for errors).
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Exit(code) => *code,
            _ => 1,
        }
    }

    /// The server's status code when this is a server failure.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            CliError::Api(s) => Some(s.code),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.status_code() == Some(404)
    }
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;
