//! `-o go-template=…` / `--template`: a subset of Go's `text/template` over the object as
//! JSON, as kubectl's template printer runs it.
//!
//! Supported: text and `{{…}}` actions with `{{-`/`-}}` trimming and `{{/* comments */}}`;
//! fields (`.`, `.a.b`, `$`, `$x.a`), string/number/bool/nil literals, variables
//! (`{{$x := …}}`, `{{range $i, $e := …}}`), pipelines (`… | printf "%s"`), parenthesised
//! pipelines; `if`/`else if`/`else`, `range` (lists and maps, sorted keys, with `else`),
//! `with`; the functions `index`, `len`, `printf`, `print`, `println`, `eq`, `ne`, `lt`,
//! `le`, `gt`, `ge`, `and`, `or`, `not`, `base64decode`. Values print as Go prints them
//! (`<no value>` for missing keys, `map[k:v]`, `[a b]`). Not supported: `define`,
//! `template`, `block`, `break`/`continue`, methods, `call`, `html`/`js`/`urlquery`.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::Value;

use crate::error::{CliError, Result};

#[derive(Debug, Clone)]
enum Node {
    Text(String),
    Action(Pipeline),
    If(Vec<(Pipeline, Vec<Node>)>, Vec<Node>),
    Range {
        vars: Vec<String>,
        pipe: Pipeline,
        body: Vec<Node>,
        else_: Vec<Node>,
    },
    With(Pipeline, Vec<Node>, Vec<Node>),
}

#[derive(Debug, Clone)]
struct Pipeline {
    decl: Vec<String>,
    cmds: Vec<Vec<Operand>>,
}

#[derive(Debug, Clone)]
enum Operand {
    /// `.a.b` on dot (empty path = `.`).
    Dot(Vec<String>),
    /// `$x.a.b`.
    Var(String, Vec<String>),
    Str(String),
    Num(f64, bool),
    Bool(bool),
    Nil,
    Ident(String),
    Sub(Box<Pipeline>, Vec<String>),
}

/// A runtime value: JSON, or "missing" (Go's invalid value).
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Missing,
    J(Value),
}

fn perr(msg: impl std::fmt::Display) -> CliError {
    CliError::msg(format!("error parsing template: {msg}"))
}

/// Splits the template into text and action strings (with trimming applied).
fn lex(src: &str) -> Result<Vec<(bool, String)>> {
    let mut out: Vec<(bool, String)> = Vec::new();
    let mut rest = src;
    let mut trim_next = false;
    while !rest.is_empty() {
        match rest.find("{{") {
            None => {
                let t = if trim_next { rest.trim_start() } else { rest };
                out.push((false, t.to_string()));
                break;
            }
            Some(i) => {
                let mut text = &rest[..i];
                if trim_next {
                    text = text.trim_start();
                }
                let after = &rest[i + 2..];
                let trim_left =
                    after.starts_with("- ") || after.starts_with("-\t") || after.starts_with("-\n");
                if trim_left {
                    text = text.trim_end();
                }
                out.push((false, text.to_string()));
                let body_start = if trim_left { 1 } else { 0 };
                let end = find_close(after).ok_or_else(|| perr("unclosed action"))?;
                let mut body = &after[body_start..end];
                trim_next = false;
                if body.ends_with(" -") || body.ends_with("\t-") || body.ends_with("\n-") {
                    body = &body[..body.len() - 1];
                    trim_next = true;
                }
                out.push((true, body.trim().to_string()));
                rest = &after[end + 2..];
            }
        }
    }
    Ok(out)
}

/// The position of the closing `}}` of an action, skipping quoted strings.
fn find_close(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'`' => {
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += 1;
                }
            }
            b'}' if i + 1 < b.len() && b[i + 1] == b'}' => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Tokens of an action.
fn tokenize(s: &str) -> Result<Vec<String>> {
    let mut toks = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '"' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            if i >= chars.len() {
                return Err(perr("unterminated quoted string"));
            }
            i += 1;
            toks.push(chars[start..i].iter().collect());
            continue;
        }
        if c == '`' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != '`' {
                i += 1;
            }
            i += 1;
            toks.push(chars[start..i.min(chars.len())].iter().collect());
            continue;
        }
        if c == '(' || c == ')' || c == '|' || c == ',' {
            toks.push(c.to_string());
            i += 1;
            continue;
        }
        if c == ':' && chars.get(i + 1) == Some(&'=') {
            toks.push(":=".into());
            i += 2;
            continue;
        }
        if c == '=' {
            toks.push("=".into());
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len()
            && !chars[i].is_whitespace()
            && !"()|,\"".contains(chars[i])
            && (chars[i] != ':' || chars.get(i + 1) != Some(&'='))
        {
            i += 1;
        }
        toks.push(chars[start..i].iter().collect());
    }
    Ok(toks)
}

fn split_path(s: &str) -> Vec<String> {
    s.split('.')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

fn parse_operand(toks: &[String], pos: &mut usize) -> Result<Operand> {
    let t = toks.get(*pos).ok_or_else(|| perr("missing value"))?.clone();
    *pos += 1;
    if t == "(" {
        let mut depth = 1;
        let start = *pos;
        while *pos < toks.len() {
            if toks[*pos] == "(" {
                depth += 1;
            } else if toks[*pos] == ")" {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            *pos += 1;
        }
        if depth != 0 {
            return Err(perr("unclosed left paren"));
        }
        let inner = parse_pipeline(&toks[start..*pos])?;
        *pos += 1;
        // A field chain right after the parenthesis: `(index .x 0).name`.
        let mut path = Vec::new();
        if let Some(next) = toks.get(*pos)
            && next.starts_with('.')
        {
            path = split_path(next);
            *pos += 1;
        }
        return Ok(Operand::Sub(Box::new(inner), path));
    }
    Ok(if t.starts_with('.') {
        Operand::Dot(split_path(&t))
    } else if let Some(v) = t.strip_prefix('$') {
        let (name, path) = match v.split_once('.') {
            Some((n, p)) => (n.to_string(), split_path(p)),
            None => (v.to_string(), Vec::new()),
        };
        Operand::Var(name, path)
    } else if t.starts_with('"') {
        Operand::Str(unquote(&t)?)
    } else if t.starts_with('`') {
        Operand::Str(t.trim_matches('`').to_string())
    } else if t == "true" || t == "false" {
        Operand::Bool(t == "true")
    } else if t == "nil" {
        Operand::Nil
    } else if t.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') {
        let n: f64 = t
            .parse()
            .map_err(|_| perr(format!("bad number syntax: {t:?}")))?;
        Operand::Num(n, !t.contains(['.', 'e', 'E']))
    } else {
        Operand::Ident(t)
    })
}

fn unquote(t: &str) -> Result<String> {
    serde_json::from_str::<String>(t).map_err(|_| perr(format!("invalid quoted string {t}")))
}

fn parse_pipeline(toks: &[String]) -> Result<Pipeline> {
    let mut decl = Vec::new();
    let mut toks = toks;
    if let Some(i) = toks.iter().position(|t| t == ":=" || t == "=") {
        decl = toks[..i]
            .iter()
            .filter(|t| *t != ",")
            .map(|t| t.trim_start_matches('$').to_string())
            .collect();
        toks = &toks[i + 1..];
    }
    let mut cmds = Vec::new();
    let mut cur = Vec::new();
    let mut pos = 0;
    while pos < toks.len() {
        if toks[pos] == "|" {
            cmds.push(std::mem::take(&mut cur));
            pos += 1;
            continue;
        }
        cur.push(parse_operand(toks, &mut pos)?);
    }
    cmds.push(cur);
    if cmds.iter().any(Vec::is_empty) {
        return Err(perr("missing value for command"));
    }
    Ok(Pipeline { decl, cmds })
}

fn parse(src: &str) -> Result<Vec<Node>> {
    let items = lex(src)?;
    let mut pos = 0;
    let (nodes, end) = parse_list(&items, &mut pos)?;
    if let Some(e) = end {
        return Err(perr(format!("unexpected {{{{{e}}}}}")));
    }
    Ok(nodes)
}

/// Parses nodes until `end`/`else…` (returned) or the end of input.
fn parse_list(items: &[(bool, String)], pos: &mut usize) -> Result<(Vec<Node>, Option<String>)> {
    let mut nodes = Vec::new();
    while *pos < items.len() {
        let (is_action, text) = &items[*pos];
        *pos += 1;
        if !is_action {
            if !text.is_empty() {
                nodes.push(Node::Text(text.clone()));
            }
            continue;
        }
        if text.starts_with("/*") {
            continue;
        }
        let toks = tokenize(text)?;
        let Some(first) = toks.first() else {
            return Err(perr("missing value for command"));
        };
        match first.as_str() {
            "end" => return Ok((nodes, Some("end".into()))),
            "else" => return Ok((nodes, Some(text.clone()))),
            "if" => {
                let mut branches = vec![(parse_pipeline(&toks[1..])?, Vec::new())];
                let mut else_ = Vec::new();
                loop {
                    let (body, end) = parse_list(items, pos)?;
                    let Some(end) = end else {
                        return Err(perr("unexpected EOF"));
                    };
                    if let Some(last) = branches.last_mut() {
                        last.1 = body;
                    }
                    if end == "end" {
                        break;
                    }
                    let et = tokenize(&end)?;
                    if et.get(1).map(String::as_str) == Some("if") {
                        branches.push((parse_pipeline(&et[2..])?, Vec::new()));
                        continue;
                    }
                    let (body, end) = parse_list(items, pos)?;
                    if end.as_deref() != Some("end") {
                        return Err(perr("expected end"));
                    }
                    else_ = body;
                    break;
                }
                nodes.push(Node::If(branches, else_));
            }
            "range" | "with" => {
                let pipe = parse_pipeline(&toks[1..])?;
                let (body, end) = parse_list(items, pos)?;
                let mut else_ = Vec::new();
                match end.as_deref() {
                    Some("end") => {}
                    Some(_) => {
                        let (b, e) = parse_list(items, pos)?;
                        if e.as_deref() != Some("end") {
                            return Err(perr("expected end"));
                        }
                        else_ = b;
                    }
                    None => return Err(perr("unexpected EOF")),
                }
                if first == "range" {
                    let vars = pipe.decl.clone();
                    let pipe = Pipeline {
                        decl: Vec::new(),
                        cmds: pipe.cmds,
                    };
                    nodes.push(Node::Range {
                        vars,
                        pipe,
                        body,
                        else_,
                    });
                } else {
                    nodes.push(Node::With(pipe, body, else_));
                }
            }
            "define" | "template" | "block" | "break" | "continue" => {
                return Err(perr(format!("{first} is not supported")));
            }
            _ => nodes.push(Node::Action(parse_pipeline(&toks)?)),
        }
    }
    Ok((nodes, None))
}

struct Exec<'a> {
    root: &'a Value,
    vars: Vec<(String, Val)>,
    allow_missing: bool,
}

fn truth(v: &Val) -> bool {
    match v {
        Val::Missing => false,
        Val::J(j) => match j {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(m) => !m.is_empty(),
        },
    }
}

/// Go's printing of a value in a template.
fn print_val(v: &Val) -> String {
    match v {
        Val::Missing | Val::J(Value::Null) => "<no value>".into(),
        Val::J(j) => super::table::go_sprint(j),
    }
}

impl Exec<'_> {
    fn field(&self, mut cur: Val, path: &[String], what: &str) -> Result<Val> {
        for p in path {
            cur = match cur {
                Val::J(Value::Object(m)) => match m.get(p) {
                    Some(v) => Val::J(v.clone()),
                    None if self.allow_missing => Val::Missing,
                    None => {
                        return Err(CliError::msg(format!("map has no entry for key \"{p}\"")));
                    }
                },
                Val::Missing | Val::J(Value::Null) => {
                    return Err(CliError::msg(format!(
                        "template: output: executing \"output\" at <{what}>: nil pointer evaluating interface {{}}.{p}"
                    )));
                }
                Val::J(other) => {
                    return Err(CliError::msg(format!(
                        "template: output: executing \"output\" at <{what}>: can't evaluate field {p} in type {}",
                        go_type(&other)
                    )));
                }
            };
        }
        Ok(cur)
    }

    fn var(&self, name: &str) -> Result<Val> {
        if name.is_empty() {
            return Ok(Val::J(self.root.clone()));
        }
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| CliError::msg(format!("undefined variable: ${name}")))
    }

    fn operand(&mut self, op: &Operand, dot: &Val) -> Result<Val> {
        Ok(match op {
            Operand::Dot(path) => self.field(dot.clone(), path, &format!(".{}", path.join(".")))?,
            Operand::Var(name, path) => {
                let base = self.var(name)?;
                self.field(base, path, &format!("${name}"))?
            }
            Operand::Str(s) => Val::J(Value::String(s.clone())),
            Operand::Num(n, int) => Val::J(if *int {
                Value::from(*n as i64)
            } else {
                serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number)
            }),
            Operand::Bool(b) => Val::J(Value::Bool(*b)),
            Operand::Nil => Val::J(Value::Null),
            Operand::Ident(name) => self.call(name, &[], dot, None)?,
            Operand::Sub(p, path) => {
                let v = self.pipeline(p, dot)?;
                self.field(v, path, "(...)")?
            }
        })
    }

    fn pipeline(&mut self, p: &Pipeline, dot: &Val) -> Result<Val> {
        let mut prev: Option<Val> = None;
        for cmd in &p.cmds {
            let v = match &cmd[0] {
                Operand::Ident(name) => self.call(name, &cmd[1..], dot, prev.take())?,
                op => {
                    if cmd.len() > 1 || prev.is_some() {
                        return Err(CliError::msg("can't give argument to non-function"));
                    }
                    self.operand(op, dot)?
                }
            };
            prev = Some(v);
        }
        let v = prev.unwrap_or(Val::Missing);
        for name in &p.decl {
            self.vars.push((name.clone(), v.clone()));
        }
        Ok(v)
    }

    fn call(&mut self, name: &str, args: &[Operand], dot: &Val, piped: Option<Val>) -> Result<Val> {
        let mut vals = Vec::new();
        for a in args {
            vals.push(self.operand(a, dot)?);
        }
        if let Some(p) = piped {
            vals.push(p);
        }
        let s = |v: Value| Ok(Val::J(v));
        match name {
            "len" => match vals.first() {
                Some(Val::J(Value::String(x))) => s(Value::from(x.len())),
                Some(Val::J(Value::Array(x))) => s(Value::from(x.len())),
                Some(Val::J(Value::Object(x))) => s(Value::from(x.len())),
                _ => Err(CliError::msg("error calling len: len of nil pointer")),
            },
            "index" => {
                let mut cur = vals.first().cloned().unwrap_or(Val::Missing);
                for k in vals.iter().skip(1) {
                    cur = match (&cur, k) {
                        (Val::J(Value::Object(m)), Val::J(Value::String(key))) => {
                            m.get(key).cloned().map_or(Val::Missing, Val::J)
                        }
                        (Val::J(Value::Array(a)), Val::J(Value::Number(n))) => {
                            let i = n.as_i64().unwrap_or(-1);
                            match usize::try_from(i).ok().and_then(|i| a.get(i)) {
                                Some(v) => Val::J(v.clone()),
                                None => {
                                    return Err(CliError::msg(format!(
                                        "error calling index: index out of range: {i}"
                                    )));
                                }
                            }
                        }
                        (Val::Missing | Val::J(Value::Null), _) => Val::Missing,
                        _ => return Err(CliError::msg("error calling index: cannot index")),
                    };
                }
                Ok(cur)
            }
            "not" => s(Value::Bool(!vals.first().is_some_and(truth))),
            "and" => Ok(vals
                .iter()
                .find(|v| !truth(v))
                .or(vals.last())
                .cloned()
                .unwrap_or(Val::Missing)),
            "or" => Ok(vals
                .iter()
                .find(|v| truth(v))
                .or(vals.last())
                .cloned()
                .unwrap_or(Val::Missing)),
            "eq" => {
                let first = vals.first().cloned().unwrap_or(Val::Missing);
                s(Value::Bool(vals.iter().skip(1).any(|v| eq_val(&first, v))))
            }
            "ne" => s(Value::Bool(!eq_val(
                vals.first().unwrap_or(&Val::Missing),
                vals.get(1).unwrap_or(&Val::Missing),
            ))),
            "lt" | "le" | "gt" | "ge" => {
                let a = vals.first().unwrap_or(&Val::Missing);
                let b = vals.get(1).unwrap_or(&Val::Missing);
                let ord = cmp_val(a, b).ok_or_else(|| {
                    CliError::msg(format!(
                        "error calling {name}: incompatible types for comparison"
                    ))
                })?;
                use std::cmp::Ordering::*;
                s(Value::Bool(match name {
                    "lt" => ord == Less,
                    "le" => ord != Greater,
                    "gt" => ord == Greater,
                    _ => ord != Less,
                }))
            }
            "print" => s(Value::String(go_print(&vals, false))),
            "println" => s(Value::String(go_print(&vals, true))),
            "printf" => {
                let fmt = match vals.first() {
                    Some(Val::J(Value::String(f))) => f.clone(),
                    _ => return Err(CliError::msg("printf: format is not a string")),
                };
                s(Value::String(sprintf(&fmt, &vals[1..])))
            }
            "base64decode" => match vals.first() {
                Some(Val::J(Value::String(x))) => {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(x)
                        .map_err(|e| CliError::msg(format!("base64decode: {e}")))?;
                    s(Value::String(String::from_utf8_lossy(&bytes).into_owned()))
                }
                _ => Err(CliError::msg("base64decode: expected a string")),
            },
            other => Err(CliError::msg(format!(
                "error parsing template: function \"{other}\" not defined"
            ))),
        }
    }

    fn run(&mut self, nodes: &[Node], dot: &Val, out: &mut String) -> Result<()> {
        for n in nodes {
            match n {
                Node::Text(t) => out.push_str(t),
                Node::Action(p) => {
                    let v = self.pipeline(p, dot)?;
                    if p.decl.is_empty() {
                        out.push_str(&print_val(&v));
                    }
                }
                Node::If(branches, else_) => {
                    let mut done = false;
                    for (cond, body) in branches {
                        let v = self.pipeline(cond, dot)?;
                        if truth(&v) {
                            self.scoped(body, dot, out)?;
                            done = true;
                            break;
                        }
                    }
                    if !done {
                        self.scoped(else_, dot, out)?;
                    }
                }
                Node::With(p, body, else_) => {
                    let v = self.pipeline(p, dot)?;
                    if truth(&v) {
                        self.scoped(body, &v, out)?;
                    } else {
                        self.scoped(else_, dot, out)?;
                    }
                }
                Node::Range {
                    vars,
                    pipe,
                    body,
                    else_,
                } => {
                    let v = self.pipeline(pipe, dot)?;
                    let elems: Vec<(Value, Value)> = match &v {
                        Val::J(Value::Array(a)) => a
                            .iter()
                            .enumerate()
                            .map(|(i, e)| (Value::from(i), e.clone()))
                            .collect(),
                        Val::J(Value::Object(m)) => {
                            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
                            sorted
                                .into_iter()
                                .map(|(k, e)| (Value::String(k.clone()), e.clone()))
                                .collect()
                        }
                        Val::Missing | Val::J(Value::Null) => Vec::new(),
                        Val::J(other) => {
                            return Err(CliError::msg(format!(
                                "range can't iterate over {}",
                                go_sprint_json(other)
                            )));
                        }
                    };
                    if elems.is_empty() {
                        self.scoped(else_, dot, out)?;
                    }
                    for (k, e) in elems {
                        let mark = self.vars.len();
                        match vars.len() {
                            1 => self.vars.push((vars[0].clone(), Val::J(e.clone()))),
                            2 => {
                                self.vars.push((vars[0].clone(), Val::J(k)));
                                self.vars.push((vars[1].clone(), Val::J(e.clone())));
                            }
                            _ => {}
                        }
                        self.run(body, &Val::J(e), out)?;
                        self.vars.truncate(mark);
                    }
                }
            }
        }
        Ok(())
    }

    fn scoped(&mut self, nodes: &[Node], dot: &Val, out: &mut String) -> Result<()> {
        let mark = self.vars.len();
        let r = self.run(nodes, dot, out);
        self.vars.truncate(mark);
        r
    }
}

fn go_sprint_json(v: &Value) -> String {
    super::table::go_sprint(v)
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::Bool(_) => "bool",
        Value::Array(_) => "[]interface {}",
        _ => "interface {}",
    }
}

fn eq_val(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::J(Value::Number(x)), Val::J(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (Val::Missing, Val::J(Value::Null)) | (Val::J(Value::Null), Val::Missing) => true,
        _ => a == b,
    }
}

fn cmp_val(a: &Val, b: &Val) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Val::J(Value::Number(x)), Val::J(Value::Number(y))) => {
            x.as_f64()?.partial_cmp(&y.as_f64()?)
        }
        (Val::J(Value::String(x)), Val::J(Value::String(y))) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Go's `fmt.Sprint` / `Sprintln` over template values.
fn go_print(vals: &[Val], ln: bool) -> String {
    let mut out = String::new();
    for (i, v) in vals.iter().enumerate() {
        let is_str = matches!(v, Val::J(Value::String(_)));
        let prev_str = i > 0 && matches!(vals[i - 1], Val::J(Value::String(_)));
        if i > 0 && (ln || (!is_str && !prev_str)) {
            out.push(' ');
        }
        out.push_str(&print_val(v));
    }
    if ln {
        out.push('\n');
    }
    out
}

/// A subset of Go's `fmt.Sprintf`: flags `-`/`0`, width, precision; verbs `s v d q f t x`.
fn sprintf(fmt: &str, args: &[Val]) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    let mut next = 0;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut left = false;
        let mut zero = false;
        while let Some(&f) = chars.peek() {
            match f {
                '-' => left = true,
                '0' => zero = true,
                '+' | ' ' | '#' => {}
                _ => break,
            }
            chars.next();
        }
        let mut width = String::new();
        while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            width.push(d);
            chars.next();
        }
        let mut prec: Option<usize> = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut p = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                p.push(d);
                chars.next();
            }
            prec = Some(p.parse().unwrap_or(0));
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(next) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        next += 1;
        let text = match (verb, arg) {
            ('d', Val::J(Value::Number(n))) => n.as_i64().map_or_else(
                || format!("%!d(float64={})", print_val(arg)),
                |i| i.to_string(),
            ),
            ('f' | 'F', Val::J(Value::Number(n))) => {
                format!("{:.*}", prec.unwrap_or(6), n.as_f64().unwrap_or_default())
            }
            ('q', Val::J(Value::String(s))) => serde_json::to_string(s).unwrap_or_default(),
            ('x', Val::J(Value::String(s))) => s.bytes().map(|b| format!("{b:02x}")).collect(),
            ('x', Val::J(Value::Number(n))) => {
                n.as_i64().map(|i| format!("{i:x}")).unwrap_or_default()
            }
            ('s' | 'v', v) => {
                let t = print_val(v);
                match (verb, prec) {
                    ('s', Some(p)) => t.chars().take(p).collect(),
                    _ => t,
                }
            }
            ('t', Val::J(Value::Bool(b))) => b.to_string(),
            (v, a) => format!("%!{v}({})", print_val(a)),
        };
        let w: usize = width.parse().unwrap_or(0);
        let len = text.chars().count();
        if len < w {
            let pad = w - len;
            if left {
                out.push_str(&text);
                out.push_str(&" ".repeat(pad));
            } else if zero {
                out.push_str(&"0".repeat(pad));
                out.push_str(&text);
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(&text);
            }
        } else {
            out.push_str(&text);
        }
    }
    if next < args.len() {
        out.push_str("%!(EXTRA ");
        out.push_str(
            &args[next..]
                .iter()
                .map(print_val)
                .collect::<Vec<_>>()
                .join(", "),
        );
        out.push(')');
    }
    out
}

/// Runs a template over an object (or kubectl's `List`).
pub fn execute(template: &str, obj: &Value, allow_missing: bool) -> Result<String> {
    let nodes = parse(template)?;
    let mut exec = Exec {
        root: obj,
        vars: Vec::new(),
        allow_missing,
    };
    let mut out = String::new();
    exec.run(&nodes, &Val::J(obj.clone()), &mut out)
        .map_err(|e| match e {
            CliError::Msg(m) => {
                CliError::msg(format!("error executing template {template:?}: {m}"))
            }
            other => other,
        })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    fn list() -> Value {
        json!({"kind": "List", "items": [
            {"metadata": {"name": "a", "labels": {"app": "x"}}, "spec": {"replicas": 2}},
            {"metadata": {"name": "b"}, "spec": {"replicas": 0}}
        ], "data": {"k": "aGVsbG8="}})
    }

    fn run(t: &str) -> String {
        execute(t, &list(), true).unwrap()
    }

    #[test]
    fn basics() {
        assert_eq!(run("{{.kind}}"), "List");
        assert_eq!(run("{{range .items}}{{.metadata.name}} {{end}}"), "a b ");
        assert_eq!(
            run("{{range .items}}{{if .spec.replicas}}{{.metadata.name}}{{else}}-{{end}}{{end}}"),
            "a-"
        );
        assert_eq!(run("{{len .items}}"), "2");
        assert!(run("{{index .items 1 | printf \"%v\"}}").starts_with("map["));
        assert_eq!(run("{{(index .items 0).metadata.name}}"), "a");
        assert_eq!(
            run("{{index .items 0 \"metadata\" \"labels\" \"app\"}}"),
            "x"
        );
        assert_eq!(run("{{.nope}}"), "<no value>");
        assert_eq!(run("{{printf \"%-4s|%3d\" \"ab\" 7}}"), "ab  |  7");
        assert_eq!(
            run("{{range $i, $e := .items}}{{$i}}={{$e.metadata.name}},{{end}}"),
            "0=a,1=b,"
        );
        assert_eq!(
            run("{{range $k, $v := .data}}{{$k}}:{{$v | base64decode}}{{end}}"),
            "k:hello"
        );
        assert_eq!(run("{{- \"x\" -}}  \n {{\"y\"}}"), "xy");
        assert_eq!(run("{{if eq .kind \"List\" \"X\"}}yes{{end}}"), "yes");
        assert_eq!(
            run("{{if and .items (gt (len .items) 1)}}many{{end}}"),
            "many"
        );
        assert_eq!(run("{{with .nope}}x{{else}}none{{end}}"), "none");
        assert_eq!(run("{{/* c */}}ok"), "ok");
        assert_eq!(run("{{$n := len .items}}{{$n}}"), "2");
        assert!(execute("{{.a", &list(), true).is_err());
        assert!(execute("{{.nope}}", &list(), false).is_err());
        assert!(execute("{{range .items}}", &list(), true).is_err());
    }
}
