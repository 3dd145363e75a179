//! The JSONPath dialect of `k8s.io/client-go/util/jsonpath`, as CRDs'
//! `additionalPrinterColumns` use it (missing keys allowed).
//!
//! A template is text with actions in braces; the column convertor wraps each column's
//! `jsonPath` in braces and keeps the first result of the first action. Inside an action:
//! fields (`.a.b`, `['a']`), array indexes and slices (`[0]`, `[-1]`, `[1:3]`, `[::2]`,
//! `[*]`), wildcards (`.*`), recursive descent (`..name`), unions (`[0,2]`, `['a','b']`),
//! filters (`[?(@.type=="Ready")]`, `[?(@.n > 3)]`, `[?(@.x)]`), and literals (quoted
//! strings, numbers, `true`/`false`). Parsing and evaluation follow upstream's rules,
//! including its errors (an out-of-range index, a filter on a non-list, comparing values of
//! different kinds), which make a cell empty. `range`/`end` loops are not supported (an
//! evaluation error).

use serde_json::Value;

/// A parse or evaluation error (upstream's message; callers only need to know it failed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Error(pub(crate) String);

fn err<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(msg.into()))
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Param {
    value: i64,
    known: bool,
    derived: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Node {
    List(Vec<Node>),
    Text(String),
    Field(String),
    Array([Param; 3]),
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        op: String,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Wildcard,
    Recursive,
    Union(Vec<Vec<Node>>),
    Identifier(String),
}

/// A parsed template.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct JsonPath {
    root: Vec<Node>,
}

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    width: usize,
    root: Vec<Node>,
}

fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
        ),
    }
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

impl<'a> Parser<'a> {
    fn new(input: &'a str) -> Self {
        Parser {
            input,
            pos: 0,
            start: 0,
            width: 0,
            root: Vec::new(),
        }
    }

    fn next(&mut self) -> Option<char> {
        match self.input[self.pos..].chars().next() {
            Some(c) => {
                self.width = c.len_utf8();
                self.pos += self.width;
                Some(c)
            }
            None => {
                self.width = 0;
                None
            }
        }
    }

    fn backup(&mut self) {
        self.pos -= self.width;
    }

    fn peek(&mut self) -> Option<char> {
        let c = self.next();
        self.backup();
        c
    }

    fn consume(&mut self) -> &'a str {
        let text = &self.input[self.start..self.pos];
        self.start = self.pos;
        text
    }

    fn rest(&self) -> &'a str {
        &self.input[self.pos..]
    }

    fn parse(mut self) -> Result<Vec<Node>, Error> {
        loop {
            // Text up to the next action.
            loop {
                if self.rest().starts_with('{') {
                    break;
                }
                if self.next().is_none() {
                    if self.pos > self.start {
                        let text = self.consume().to_string();
                        self.root.push(Node::Text(text));
                    }
                    return Ok(self.root);
                }
            }
            if self.pos > self.start {
                let text = self.consume().to_string();
                self.root.push(Node::Text(text));
            }
            self.pos += 1;
            self.consume();
            let mut action = Vec::new();
            self.inside_action(&mut action)?;
            self.root.push(Node::List(action));
        }
    }

    /// Parses the inside of an action up to and including its closing brace.
    fn inside_action(&mut self, cur: &mut Vec<Node>) -> Result<(), Error> {
        loop {
            let rest = self.rest();
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume();
                return Ok(());
            }
            if rest.starts_with("[?(") {
                self.filter(cur)?;
                continue;
            }
            if rest.starts_with("..") {
                self.recursive(cur)?;
                continue;
            }
            match self.next() {
                None | Some('\r' | '\n') => return err("unclosed action"),
                Some(' ' | '@' | '$') => {
                    self.consume();
                }
                Some('[') => self.array(cur)?,
                Some(q @ ('"' | '\'')) => self.quote(cur, q)?,
                Some('.') => self.field(cur),
                Some(c) if c == '+' || c == '-' || c.is_numeric() => {
                    self.backup();
                    self.number(cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.backup();
                    self.identifier(cur);
                }
                Some(c) => {
                    return err(format!(
                        "unrecognized character in action: U+{:04X}",
                        u32::from(c)
                    ));
                }
            }
        }
    }

    fn identifier(&mut self, cur: &mut Vec<Node>) {
        loop {
            let c = self.next();
            if is_terminator(c) {
                self.backup();
                break;
            }
        }
        let value = self.consume();
        cur.push(match value {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            other => Node::Identifier(other.to_string()),
        });
    }

    fn recursive(&mut self, cur: &mut Vec<Node>) -> Result<(), Error> {
        if matches!(cur.last(), Some(Node::Recursive)) {
            return err("invalid multiple recursive descent");
        }
        self.pos += 2;
        self.consume();
        cur.push(Node::Recursive);
        if self.peek().is_some_and(is_alphanumeric) {
            self.field(cur);
        }
        Ok(())
    }

    fn number(&mut self, cur: &mut Vec<Node>) -> Result<(), Error> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        loop {
            match self.next() {
                Some(c) if c == '.' || c.is_numeric() => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        let value = self.consume();
        let unsigned = value.strip_prefix('+').unwrap_or(value);
        if let Ok(i) = unsigned.parse::<i64>() {
            cur.push(Node::Int(i));
        } else if let Some(f) = parse_go_float(value) {
            cur.push(Node::Float(f));
        } else {
            return err(format!("cannot parse number {value}"));
        }
        Ok(())
    }

    fn array(&mut self, cur: &mut Vec<Node>) -> Result<(), Error> {
        loop {
            match self.next() {
                None | Some('\n') => return err("unterminated array"),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let whole = self.consume();
        let mut text = &whole[1..whole.len() - 1];
        if text == "*" {
            text = ":";
        }
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let mut union = Vec::with_capacity(parts.len());
            for part in parts {
                union.push(parse_action(&format!("[{}]", part.trim_matches(' ')))?);
            }
            cur.push(Node::Union(union));
            return Ok(());
        }
        // A quoted dictionary key: `['a']` is `.a`.
        if text.len() >= 2
            && text.starts_with('\'')
            && text.ends_with('\'')
            && !text[1..text.len() - 1].contains('\'')
        {
            let nodes = parse_action(&format!(".{}", &text[1..text.len() - 1]))?;
            cur.extend(nodes);
            return Ok(());
        }
        cur.push(Node::Array(slice_params(text)?));
        Ok(())
    }

    fn filter(&mut self, cur: &mut Vec<Node>) -> Result<(), Error> {
        self.pos += 3;
        self.consume();
        let mut begin = false;
        let mut end = false;
        let mut pair = '\0';
        loop {
            match self.next() {
                None | Some('\n') => return err("unterminated filter"),
                Some(q @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = q;
                        continue;
                    }
                    if self.input.as_bytes()[self.pos - 2] != b'\\' && q == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return err("unclosed array expect ]");
        }
        let whole = self.consume();
        let text = &whole[..whole.len() - 2];
        match split_comparison(text) {
            None => cur.push(Node::Filter {
                left: parse_action(text)?,
                right: Vec::new(),
                op: "exists".to_string(),
            }),
            Some((left, op, right)) => cur.push(Node::Filter {
                left: parse_action(left)?,
                right: parse_action(right)?,
                op: op.to_string(),
            }),
        }
        Ok(())
    }

    fn quote(&mut self, cur: &mut Vec<Node>, end: char) -> Result<(), Error> {
        loop {
            match self.next() {
                None | Some('\n') => return err("unterminated quoted string"),
                Some(c) if c == end && self.input.as_bytes()[self.pos - 2] != b'\\' => break,
                Some(_) => {}
            }
        }
        let value = self.consume();
        match unquote(value) {
            Some(s) => {
                cur.push(Node::Text(s));
                Ok(())
            }
            None => err(format!("unquote string {value} error invalid syntax")),
        }
    }

    fn field(&mut self, cur: &mut Vec<Node>) {
        self.consume();
        loop {
            let c = self.next();
            if c == Some('\\') {
                self.next();
            } else if is_terminator(c) {
                self.backup();
                break;
            }
        }
        let value = self.consume();
        if value == "*" {
            cur.push(Node::Wildcard);
        } else {
            cur.push(Node::Field(value.replace('\\', "")));
        }
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for the digit-and-dot strings the number scanner reads.
fn parse_go_float(s: &str) -> Option<f64> {
    let digits = s.trim_start_matches(['+', '-']);
    if digits.is_empty() || digits == "." || !digits.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse::<f64>().ok()
}

/// Splits a filter on its comparison operator, as upstream's
/// `^([^!<>=]+)([!<>=]+)(.+?)$`.
fn split_comparison(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let op_start = text.find(is_op)?;
    if op_start == 0 {
        return None;
    }
    let after = &text[op_start..];
    let op_len = after.find(|c: char| !is_op(c)).unwrap_or(after.len());
    let right = &after[op_len..];
    if right.is_empty() || right.contains(['\n', '\r']) || text[..op_start].contains('\n') {
        return None;
    }
    Some((&text[..op_start], &after[..op_len], right))
}

/// Parses the parameters of an index or slice: `^(-?\d*)(:-?\d*)?(:-?\d*)?$`.
fn slice_params(text: &str) -> Result<[Param; 3], Error> {
    let invalid = || Error(format!("invalid array index {text}"));
    let mut pieces = text.split(':');
    let mut raw: [Option<&str>; 3] = [None, None, None];
    for slot in raw.iter_mut() {
        *slot = pieces.next();
    }
    if pieces.next().is_some() {
        return Err(invalid());
    }
    let valid = |s: &str| {
        let digits = s.strip_prefix('-').unwrap_or(s);
        digits.chars().all(|c| c.is_ascii_digit())
    };
    if !raw.iter().flatten().all(|s| valid(s)) {
        return Err(invalid());
    }
    let number = |s: &str| {
        s.parse::<i64>()
            .map_err(|_| Error(format!("array index {s} is not a number")))
    };
    let mut params = [Param::default(); 3];
    match raw[0] {
        Some(s) if !s.is_empty() => {
            params[0] = Param {
                value: number(s)?,
                known: true,
                derived: false,
            };
        }
        _ => {}
    }
    match raw[1] {
        Some("") => {}
        Some(s) => {
            params[1] = Param {
                value: number(s)?,
                known: true,
                derived: false,
            };
        }
        None => {
            params[1] = Param {
                value: params[0].value.saturating_add(1),
                known: true,
                derived: true,
            };
        }
    }
    if let Some(s) = raw[2].filter(|s| !s.is_empty()) {
        params[2] = Param {
            value: number(s)?,
            known: true,
            derived: false,
        };
    }
    Ok(params)
}

/// Parses `text` as the inside of one action (upstream's `parseAction`).
fn parse_action(text: &str) -> Result<Vec<Node>, Error> {
    let wrapped = format!("{{{text}}}");
    let root = Parser::new(&wrapped).parse()?;
    match root.into_iter().next() {
        Some(Node::List(nodes)) => Ok(nodes),
        _ => err("invalid action"),
    }
}

/// Go's `strconv.Unquote`, extended to single-quoted strings of any length.
fn unquote(s: &str) -> Option<String> {
    let quote = s.chars().next()?;
    if s.len() < 2 || !s.ends_with(quote) || !matches!(quote, '"' | '\'') {
        return None;
    }
    let inner = &s[1..s.len() - 1];
    if !inner.contains('\\') && !inner.contains(quote) {
        return Some(inner.to_string());
    }
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        let hex = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| {
            let mut v = 0u32;
            for _ in 0..n {
                v = v * 16 + chars.next()?.to_digit(16)?;
            }
            Some(v)
        };
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' => out.push('\\'),
            '\'' | '"' if e == quote => out.push(e),
            'x' => out.push(char::from_u32(hex(&mut chars, 2)?)?),
            'u' => out.push(char::from_u32(hex(&mut chars, 4)?)?),
            'U' => out.push(char::from_u32(hex(&mut chars, 8)?)?),
            '0'..='7' => {
                let mut v = e.to_digit(8)?;
                for _ in 0..2 {
                    v = v * 8 + chars.next()?.to_digit(8)?;
                }
                if v > 255 {
                    return None;
                }
                out.push(char::from_u32(v)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

impl JsonPath {
    /// Parses a template (`{.spec.replicas}`; text outside braces is literal).
    pub(crate) fn parse(template: &str) -> Result<JsonPath, Error> {
        Ok(JsonPath {
            root: Parser::new(template).parse()?,
        })
    }

    /// The results of each top-level node, as upstream's `FindResults`.
    pub(crate) fn find_results<'a>(&'a self, data: &'a Value) -> Result<Vec<Vec<Item<'a>>>, Error> {
        let mut full = Vec::with_capacity(self.root.len());
        for node in &self.root {
            match walk(vec![Item::Json(data)], node) {
                Ok(items) => full.push(items),
                Err(_) => return err("evaluation failed"),
            }
        }
        Ok(full)
    }

    /// The first result of the first action, or `None` (missing, or an error).
    pub(crate) fn first<'a>(&'a self, data: &'a Value) -> Option<Item<'a>> {
        let mut results = self.find_results(data).ok()?;
        if results.is_empty() {
            return None;
        }
        let first = results.swap_remove(0);
        first.into_iter().next()
    }
}

/// A value met while evaluating: part of the object, or a literal of the template, or a byte
/// of a string (what a wildcard over a string yields in Go).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item<'a> {
    Json(&'a Value),
    Text(&'a str),
    Int(i64),
    Float(f64),
    Bool(bool),
    Byte(u8),
}

/// An evaluation failure carries the values upstream returns along with its error (which
/// an `exists` filter still looks at).
type Eval<'a> = Result<Vec<Item<'a>>, Vec<Item<'a>>>;

fn walk<'a>(input: Vec<Item<'a>>, node: &'a Node) -> Eval<'a> {
    match node {
        Node::List(nodes) => eval_list(input, nodes),
        Node::Text(t) => Ok(vec![Item::Text(t)]),
        Node::Field(name) => Ok(eval_field(&input, name)),
        Node::Array(params) => eval_array(input, params),
        Node::Filter { left, right, op } => eval_filter(input, left, right, op),
        Node::Int(i) => Ok(vec![Item::Int(*i); input.len()]),
        Node::Float(f) => Ok(vec![Item::Float(*f); input.len()]),
        Node::Bool(b) => Ok(vec![Item::Bool(*b); input.len()]),
        Node::Wildcard => Ok(input.iter().flat_map(children).collect()),
        Node::Recursive => Ok(eval_recursive(&input)),
        Node::Union(lists) => {
            let mut out = Vec::new();
            for list in lists {
                match eval_list(input.clone(), list) {
                    Ok(items) => out.extend(items),
                    Err(_) => return Err(input),
                }
            }
            Ok(out)
        }
        // `range` and `end` only make sense in templates, not in columns.
        Node::Identifier(_) => Err(input),
    }
}

fn eval_list<'a>(input: Vec<Item<'a>>, nodes: &'a [Node]) -> Eval<'a> {
    let mut cur = input;
    for node in nodes {
        cur = walk(cur, node)?;
    }
    Ok(cur)
}

fn eval_field<'a>(input: &[Item<'a>], name: &str) -> Vec<Item<'a>> {
    input
        .iter()
        .filter_map(|item| match item {
            Item::Json(Value::Object(m)) => m.get(name).map(Item::Json),
            _ => None,
        })
        .collect()
}

fn eval_array<'a>(input: Vec<Item<'a>>, params: &[Param; 3]) -> Eval<'a> {
    let mut result = Vec::new();
    for item in &input {
        let list = match item {
            Item::Json(Value::Null) => continue,
            Item::Json(Value::Array(list)) => list,
            _ => return Err(input),
        };
        let len = i64::try_from(list.len()).unwrap_or(i64::MAX);
        let mut p = *params;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value += len;
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value += len;
        }
        if p[1].value == p[0].value {
            return Ok(result);
        }
        if p[0].value >= len || p[0].value < 0 || p[1].value > len || p[1].value < 0 {
            return Err(input);
        }
        if p[0].value > p[1].value {
            return Err(input);
        }
        let step = if p[2].known {
            if p[2].value <= 0 {
                return Err(input);
            }
            usize::try_from(p[2].value).unwrap_or(usize::MAX)
        } else {
            1
        };
        let (from, to) = (p[0].value as usize, p[1].value as usize);
        result.extend(list[from..to].iter().step_by(step).map(Item::Json));
    }
    Ok(result)
}

/// What a wildcard yields for one value: map values, list items, or string bytes.
fn children<'a>(item: &Item<'a>) -> Vec<Item<'a>> {
    match item {
        Item::Json(Value::Object(m)) => m.values().map(Item::Json).collect(),
        Item::Json(Value::Array(list)) => list.iter().map(Item::Json).collect(),
        Item::Json(Value::String(s)) => s.bytes().map(Item::Byte).collect(),
        Item::Text(s) => s.bytes().map(Item::Byte).collect(),
        _ => Vec::new(),
    }
}

fn eval_recursive<'a>(input: &[Item<'a>]) -> Vec<Item<'a>> {
    let mut result = Vec::new();
    for item in input {
        let kids = children(item);
        if !kids.is_empty() {
            result.push(item.clone());
            result.extend(eval_recursive(&kids));
        }
    }
    result
}

fn eval_filter<'a>(
    input: Vec<Item<'a>>,
    left: &'a [Node],
    right: &'a [Node],
    op: &str,
) -> Eval<'a> {
    let mut results = Vec::new();
    for item in &input {
        let list = match item {
            Item::Json(Value::Array(list)) => list,
            _ => return Err(input),
        };
        for elem in list {
            let lefts = eval_list(vec![Item::Json(elem)], left);
            if op == "exists" {
                let found = match &lefts {
                    Ok(v) | Err(v) => !v.is_empty(),
                };
                if found {
                    results.push(Item::Json(elem));
                }
                continue;
            }
            let Ok(lefts) = lefts else {
                return Err(input);
            };
            let l = match lefts.as_slice() {
                [] => continue,
                [one] => one.clone(),
                _ => return Err(input),
            };
            let Ok(rights) = eval_list(vec![Item::Json(elem)], right) else {
                return Err(input);
            };
            let r = match rights.as_slice() {
                [] => continue,
                [one] => one.clone(),
                _ => return Err(input),
            };
            match compare(op, &l, &r) {
                Some(true) => results.push(Item::Json(elem)),
                Some(false) => {}
                None => return Err(results),
            }
        }
    }
    Ok(results)
}

/// A value as Go's template comparison functions classify it.
#[derive(Debug)]
enum Basic<'a> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'a str),
}

fn basic<'a>(item: &Item<'a>) -> Option<Basic<'a>> {
    Some(match item {
        Item::Json(Value::Bool(b)) | Item::Bool(b) => Basic::Bool(*b),
        Item::Json(Value::Number(n)) => match n.as_i64() {
            Some(i) => Basic::Int(i),
            None => Basic::Float(n.as_f64()?),
        },
        Item::Json(Value::String(s)) => Basic::Str(s),
        Item::Text(s) => Basic::Str(s),
        Item::Int(i) => Basic::Int(*i),
        Item::Float(f) => Basic::Float(*f),
        Item::Byte(b) => Basic::Uint(u64::from(*b)),
        Item::Json(_) => return None,
    })
}

/// Go's template `eq`: `None` for values that cannot be compared.
fn equal(a: &Basic<'_>, b: &Basic<'_>) -> Option<bool> {
    Some(match (a, b) {
        (Basic::Bool(x), Basic::Bool(y)) => x == y,
        (Basic::Int(x), Basic::Int(y)) => x == y,
        (Basic::Uint(x), Basic::Uint(y)) => x == y,
        (Basic::Float(x), Basic::Float(y)) => x == y,
        (Basic::Str(x), Basic::Str(y)) => x == y,
        (Basic::Int(x), Basic::Uint(y)) | (Basic::Uint(y), Basic::Int(x)) => {
            u64::try_from(*x).is_ok_and(|x| x == *y)
        }
        _ => return None,
    })
}

/// Go's template `lt`.
fn less(a: &Basic<'_>, b: &Basic<'_>) -> Option<bool> {
    Some(match (a, b) {
        (Basic::Int(x), Basic::Int(y)) => x < y,
        (Basic::Uint(x), Basic::Uint(y)) => x < y,
        (Basic::Float(x), Basic::Float(y)) => x < y,
        (Basic::Str(x), Basic::Str(y)) => x < y,
        (Basic::Int(x), Basic::Uint(y)) => u64::try_from(*x).map_or(true, |x| x < *y),
        (Basic::Uint(x), Basic::Int(y)) => u64::try_from(*y).is_ok_and(|y| *x < y),
        _ => return None,
    })
}

fn compare(op: &str, l: &Item<'_>, r: &Item<'_>) -> Option<bool> {
    let a = basic(l)?;
    let b = basic(r)?;
    match op {
        "==" => equal(&a, &b),
        "!=" => equal(&a, &b).map(|e| !e),
        "<" => less(&a, &b),
        "<=" => Some(less(&a, &b)? || equal(&a, &b)?),
        ">" => Some(!(less(&a, &b)? || equal(&a, &b)?)),
        ">=" => less(&a, &b).map(|l| !l),
        _ => None,
    }
}

/// Runs a whole template as `kubectl get -o jsonpath=…` does (client-go's
/// `JSONPath.Execute`): text and actions in order, `{range …}…{end}` loops, maps and lists
/// printed as compact JSON, several results of one action separated by spaces. With
/// `as_json` (`-o jsonpath-as-json`) each action's results print as an indented JSON
/// array. Without `allow_missing_keys`, a missing field is the error `<field> is not
/// found`. Errors carry upstream's message.
pub fn execute(
    template: &str,
    data: &Value,
    as_json: bool,
    allow_missing_keys: bool,
) -> Result<String, String> {
    let path = JsonPath::parse(template).map_err(|e| e.0)?;
    let mut out = String::new();
    let results = run_nodes(&path.root, data, allow_missing_keys)?;
    for items in &results {
        print_items(&mut out, items, as_json);
    }
    Ok(out)
}

fn is_identifier(node: &Node, name: &str) -> bool {
    matches!(node, Node::List(nodes) if matches!(nodes.first(), Some(Node::Identifier(n)) if n == name))
}

/// Evaluates template-level nodes (text and actions), expanding `range` loops.
fn run_nodes<'a>(
    nodes: &'a [Node],
    data: &'a Value,
    allow_missing_keys: bool,
) -> Result<Vec<Vec<Item<'a>>>, String> {
    let mut full = Vec::new();
    let mut i = 0;
    while i < nodes.len() {
        let node = &nodes[i];
        if is_identifier(node, "end") {
            return Err("not in range, nothing to end".into());
        }
        if let (true, Node::List(action)) = (is_identifier(node, "range"), node) {
            // Find the matching end.
            let mut depth = 0;
            let mut end = None;
            for (j, n) in nodes.iter().enumerate().skip(i + 1) {
                if is_identifier(n, "range") {
                    depth += 1;
                } else if is_identifier(n, "end") {
                    if depth == 0 {
                        end = Some(j);
                        break;
                    }
                    depth -= 1;
                }
            }
            let body = match end {
                Some(j) => &nodes[i + 1..j],
                None => &nodes[i + 1..],
            };
            let targets = eval_checked(vec![Item::Json(data)], &action[1..], allow_missing_keys)?;
            for t in targets {
                if let Item::Json(v) = t {
                    full.extend(run_nodes(body, v, allow_missing_keys)?);
                }
            }
            i = end.map_or(nodes.len(), |j| j + 1);
            continue;
        }
        let items = match node {
            Node::List(action) => eval_checked(vec![Item::Json(data)], action, allow_missing_keys)?,
            other => {
                walk(vec![Item::Json(data)], other).map_err(|_| "evaluation failed".to_string())?
            }
        };
        full.push(items);
        i += 1;
    }
    Ok(full)
}

/// Evaluates an action's nodes, with upstream's errors for missing fields and bad input.
fn eval_checked<'a>(
    input: Vec<Item<'a>>,
    nodes: &'a [Node],
    allow_missing_keys: bool,
) -> Result<Vec<Item<'a>>, String> {
    let mut cur = input;
    for node in nodes {
        if let Node::Field(name) = node {
            let next = eval_field(&cur, name);
            if next.is_empty() && !allow_missing_keys && !cur.is_empty() {
                return Err(format!("{name} is not found"));
            }
            cur = next;
            continue;
        }
        if let Node::Identifier(name) = node {
            return Err(format!("unrecognized identifier {name}"));
        }
        cur = match walk(cur, node) {
            Ok(v) => v,
            Err(_) => return Err(eval_error(node)),
        };
    }
    Ok(cur)
}

fn eval_error(node: &Node) -> String {
    match node {
        Node::Array(_) => "array index out of bounds".into(),
        Node::Filter { .. } => "invalid filter".into(),
        _ => "evaluation failed".into(),
    }
}

fn item_json(item: &Item<'_>) -> Value {
    match item {
        Item::Json(v) => (*v).clone(),
        Item::Text(t) => Value::String((*t).to_string()),
        Item::Int(i) => Value::from(*i),
        Item::Float(f) => Value::from(*f),
        Item::Bool(b) => Value::Bool(*b),
        Item::Byte(b) => Value::from(*b),
    }
}

fn print_items(out: &mut String, items: &[Item<'_>], as_json: bool) {
    if as_json {
        let list = Value::Array(items.iter().map(item_json).collect());
        out.push_str(&go_html_escape(&pretty4(&list)));
        out.push('\n');
        return;
    }
    for (i, item) in items.iter().enumerate() {
        match item {
            Item::Json(v @ (Value::Object(_) | Value::Array(_))) => {
                out.push_str(&go_html_escape(&v.to_string()));
            }
            Item::Json(Value::String(s)) => out.push_str(s),
            Item::Json(Value::Null) => out.push_str("null"),
            Item::Json(v) => out.push_str(&v.to_string()),
            Item::Text(t) => out.push_str(t),
            Item::Int(n) => out.push_str(&n.to_string()),
            Item::Float(f) => out.push_str(&f.to_string()),
            Item::Bool(b) => out.push_str(&b.to_string()),
            Item::Byte(b) => out.push_str(&b.to_string()),
        }
        if i + 1 != items.len() {
            out.push(' ');
        }
    }
}

/// Go's JSON encoder escapes `<`, `>` and `&` (they only occur inside strings).
fn go_html_escape(s: &str) -> String {
    if !s.contains(['<', '>', '&']) {
        return s.to_string();
    }
    s.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

fn pretty4(v: &Value) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    let _ = serde::Serialize::serialize(v, &mut ser);
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn first(path: &str, data: &Value) -> Option<String> {
        let p = JsonPath::parse(&format!("{{{path}}}")).unwrap();
        p.first(data).map(|item| match item {
            Item::Json(v) => v.to_string(),
            Item::Text(t) => format!("text:{t}"),
            Item::Int(i) => format!("int:{i}"),
            Item::Float(f) => format!("float:{f}"),
            Item::Bool(b) => format!("bool:{b}"),
            Item::Byte(b) => format!("byte:{b}"),
        })
    }

    fn obj() -> Value {
        json!({
            "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"replicas": 3, "ratio": 0.5, "tags": ["a", "b", "c"], "empty": [], "nil": null},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "n": 1},
                {"type": "Synced", "status": "False", "n": 2}
            ]}
        })
    }

    #[test]
    fn fields_and_indexes() {
        let o = obj();
        assert_eq!(first(".spec.replicas", &o).as_deref(), Some("3"));
        assert_eq!(first(".spec.missing", &o), None);
        assert_eq!(first(".spec.nil", &o).as_deref(), Some("null"));
        assert_eq!(first(".spec.tags[0]", &o).as_deref(), Some("\"a\""));
        assert_eq!(first(".spec.tags[-1]", &o).as_deref(), Some("\"c\""));
        assert_eq!(first(".spec.tags[1:]", &o).as_deref(), Some("\"b\""));
        assert_eq!(first(".spec.tags[::2]", &o).as_deref(), Some("\"a\""));
        assert_eq!(first(".spec.tags[*]", &o).as_deref(), Some("\"a\""));
        assert_eq!(first(".spec.tags[5]", &o), None);
        assert_eq!(first(".spec.empty[0]", &o), None);
        assert_eq!(first(".spec.replicas[0]", &o), None);
        assert_eq!(first("['spec']['replicas']", &o).as_deref(), Some("3"));
        assert_eq!(
            first(".metadata.labels.app\\.kubernetes\\.io/name", &o).as_deref(),
            Some("\"web\"")
        );
        assert_eq!(first(".spec.tags[2,0]", &o).as_deref(), Some("\"c\""));
        assert_eq!(first("..type", &o).as_deref(), Some("\"Ready\""));
        assert_eq!(
            first("..status", &o)
                .as_deref()
                .map(|s| s.starts_with("{\"conditions\"")),
            Some(true)
        );
        assert_eq!(
            first(".metadata.*", &o).as_deref(),
            Some("{\"app.kubernetes.io/name\":\"web\"}")
        );
    }

    #[test]
    fn filters() {
        let o = obj();
        let c = ".status.conditions";
        assert_eq!(
            first(&format!("{c}[?(@.type==\"Ready\")].status"), &o).as_deref(),
            Some("\"True\"")
        );
        assert_eq!(
            first(&format!("{c}[?(@.type=='Synced')].status"), &o).as_deref(),
            Some("\"False\"")
        );
        assert_eq!(
            first(&format!("{c}[?(@.n > 1)].type"), &o).as_deref(),
            Some("\"Synced\"")
        );
        assert_eq!(
            first(&format!("{c}[?(@.n>=1)].type"), &o).as_deref(),
            Some("\"Ready\"")
        );
        assert_eq!(
            first(&format!("{c}[?(@.n != 1)].type"), &o).as_deref(),
            Some("\"Synced\"")
        );
        assert_eq!(
            first(&format!("{c}[?(@.type)].n"), &o).as_deref(),
            Some("1")
        );
        assert_eq!(first(&format!("{c}[?(@.nope)].n"), &o), None);
        // Comparing a number with a string is an error: no value.
        assert_eq!(first(&format!("{c}[?(@.n==\"1\")].type"), &o), None);
        // A float against an integer is an error too.
        assert_eq!(first(&format!("{c}[?(@.n==1.0)].type"), &o), None);
        // Filtering a map is an error.
        assert_eq!(first(".spec[?(@.x)]", &o), None);
    }

    #[test]
    fn literals() {
        let o = obj();
        assert_eq!(first("\"hi\"", &o).as_deref(), Some("text:hi"));
        assert_eq!(first(".spec 42", &o).as_deref(), Some("int:42"));
        assert_eq!(first(".spec true", &o).as_deref(), Some("bool:true"));
        assert_eq!(first(".metadata.name.*", &o).as_deref(), Some("byte:120"));
        assert_eq!(first(".spec range", &o), None);
    }

    #[test]
    fn parse_errors() {
        for bad in [
            "{.a",
            "{.a[}",
            "{.a[x]}",
            "{.a[?(@.b==\"x\")}",
            "{....a}",
            "{.a[1:2:3:4]}",
            "{.a %}",
            "{\"unterminated}",
            "{.a[-]}",
            "{.a[?(@.b=='x)]}",
        ] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
        assert!(JsonPath::parse("{.a}{.b}").is_ok());
        assert!(JsonPath::parse("text only").is_ok());
        assert!(JsonPath::parse("{.a\\.b}").is_ok());
        assert!(JsonPath::parse("{.a#}").is_ok());
        assert!(JsonPath::parse("{$.a[?(@.b=='x')].c}").is_ok());
    }

    #[test]
    fn unquoting() {
        assert_eq!(unquote("\"a\\nb\"").as_deref(), Some("a\nb"));
        assert_eq!(unquote("'it''s'"), None);
        assert_eq!(unquote("'abc'").as_deref(), Some("abc"));
        assert_eq!(unquote("\"\\u00e9\\x41\\101\"").as_deref(), Some("éAA"));
        assert_eq!(unquote("\"\\q\""), None);
    }

    #[test]
    fn templates() {
        let list = serde_json::json!({"items": [
            {"metadata": {"name": "a"}, "status": {"phase": "Running"}},
            {"metadata": {"name": "b"}, "status": {"phase": "Pending"}}
        ]});
        let run = |t: &str| execute(t, &list, false, true).unwrap();
        assert_eq!(run("{.items[*].metadata.name}"), "a b");
        assert_eq!(
            run("{range .items[*]}{.metadata.name}{\"\\n\"}{end}"),
            "a\nb\n"
        );
        assert_eq!(
            run("{range .items[*]}[{.metadata.name},{.status.phase}] {end}"),
            "[a,Running] [b,Pending] "
        );
        assert_eq!(
            run("{.items[?(@.status.phase==\"Pending\")].metadata.name}"),
            "b"
        );
        assert_eq!(run("{.items[0].metadata}"), "{\"name\":\"a\"}");
        assert_eq!(run("x{.nope}y"), "xy");
        assert_eq!(
            execute("{.nope}", &list, false, false).unwrap_err(),
            "nope is not found"
        );
        assert_eq!(
            execute("{.items[*].metadata.name}", &list, true, true).unwrap(),
            "[\n    \"a\",\n    \"b\"\n]\n"
        );
        assert_eq!(
            execute("{end}", &list, false, true).unwrap_err(),
            "not in range, nothing to end"
        );
        assert!(execute("{.a", &list, false, true).is_err());
    }
}
