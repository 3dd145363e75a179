//! CEL as admission policies use it: expressions compiled once, evaluated against JSON
//! variables (`object`, `oldObject`, `request`, `params`, `namespaceObject`,
//! `variables`) with the CEL standard library (the `cel` crate: macros, strings,
//! `matches`, timestamps and durations) plus the commonly used parts of Kubernetes' CEL
//! libraries (string helpers `lowerAscii`, `upperAscii`, `trim`, `split`, `join`,
//! `replace`, `indexOf`, `lastIndexOf`; list helpers `isSorted`, `sum`).

use std::sync::Arc;

use cel::extractors::This;
use cel::{ExecutionError, Value as Cel};
use serde_json::Value;

/// A compiled expression and its source.
pub struct Expr {
    pub source: String,
    program: cel::Program,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expr")
            .field("source", &self.source)
            .finish()
    }
}

impl Expr {
    /// Compiles `source`; the error is upstream's `compilation failed: ...` text.
    pub fn compile(source: &str) -> Result<Expr, String> {
        if source.trim().is_empty() {
            return Err("compilation failed: empty expression".into());
        }
        match std::panic::catch_unwind(|| cel::Program::compile(source)) {
            Ok(Ok(program)) => Ok(Expr {
                source: source.to_string(),
                program,
            }),
            Ok(Err(e)) => Err(format!("compilation failed: {e}")),
            Err(_) => Err("compilation failed: the expression cannot be parsed".into()),
        }
    }

    /// Evaluates the expression with `vars` bound.
    pub fn eval(&self, vars: &[(&str, &Value)]) -> Result<Cel, String> {
        let mut ctx = context();
        for (name, value) in vars {
            ctx.add_variable(*name, (*value).clone())
                .map_err(|e| e.to_string())?;
        }
        // The interpreter must never take the server down on an odd input.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.program.execute(&ctx)))
        {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err("internal error evaluating the expression".into()),
        }
    }
}

/// A CEL value as JSON (maps with string keys, lists, scalars; others as their text).
pub fn to_json(v: &Cel) -> Value {
    v.json().unwrap_or_else(|_| Value::String(format!("{v:?}")))
}

fn context() -> cel::Context<'static> {
    let mut ctx = cel::Context::default();
    ctx.add_function("lowerAscii", |This(s): This<Arc<String>>| {
        s.to_ascii_lowercase()
    });
    ctx.add_function("upperAscii", |This(s): This<Arc<String>>| {
        s.to_ascii_uppercase()
    });
    ctx.add_function("trim", |This(s): This<Arc<String>>| s.trim().to_string());
    ctx.add_function(
        "split",
        |This(s): This<Arc<String>>, sep: Arc<String>| -> Result<Cel, ExecutionError> {
            Ok(Cel::List(Arc::new(
                s.split(sep.as_str())
                    .map(|p| Cel::String(Arc::new(p.to_string())))
                    .collect(),
            )))
        },
    );
    ctx.add_function(
        "join",
        |This(list): This<Arc<Vec<Cel>>>, sep: Arc<String>| -> Result<Cel, ExecutionError> {
            let sep = sep.to_string();
            let parts = list
                .iter()
                .map(|v| match v {
                    Cel::String(s) => Ok(s.to_string()),
                    other => Err(ExecutionError::function_error(
                        "join",
                        format!("join: list element is not a string: {other:?}"),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Cel::String(Arc::new(parts.join(&sep))))
        },
    );
    ctx.add_function(
        "replace",
        |This(s): This<Arc<String>>, from: Arc<String>, to: Arc<String>| {
            s.replace(from.as_str(), to.as_str())
        },
    );
    ctx.add_function(
        "indexOf",
        |This(s): This<Arc<String>>, sub: Arc<String>| -> i64 {
            s.find(sub.as_str())
                .map_or(-1, |i| i64::try_from(s[..i].chars().count()).unwrap_or(-1))
        },
    );
    ctx.add_function(
        "lastIndexOf",
        |This(s): This<Arc<String>>, sub: Arc<String>| -> i64 {
            s.rfind(sub.as_str())
                .map_or(-1, |i| i64::try_from(s[..i].chars().count()).unwrap_or(-1))
        },
    );
    ctx.add_function("isSorted", |This(list): This<Arc<Vec<Cel>>>| -> bool {
        list.windows(2)
            .all(|w| w[0].partial_cmp(&w[1]).is_some_and(|o| o.is_le()))
    });
    ctx.add_function(
        "sum",
        |This(list): This<Arc<Vec<Cel>>>| -> Result<Cel, ExecutionError> {
            let mut int = 0i64;
            let mut float = 0f64;
            let mut is_float = false;
            for v in list.iter() {
                match v {
                    Cel::Int(i) => int = int.saturating_add(*i),
                    Cel::UInt(u) => int = int.saturating_add(i64::try_from(*u).unwrap_or(i64::MAX)),
                    Cel::Float(f) => {
                        is_float = true;
                        float += f;
                    }
                    other => {
                        return Err(ExecutionError::function_error(
                            "sum",
                            format!("cannot sum {other:?}"),
                        ));
                    }
                }
            }
            Ok(if is_float {
                Cel::Float(float + int as f64)
            } else {
                Cel::Int(int)
            })
        },
    );
    ctx
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn eval(src: &str, object: Value) -> Result<Cel, String> {
        Expr::compile(src).unwrap().eval(&[("object", &object)])
    }

    #[test]
    fn the_expressions_policies_write() {
        let deploy = json!({"metadata": {"name": "web-1", "labels": {"env": "prod"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "registry.local/web:1"}]}}}});
        for (src, want) in [
            ("object.spec.replicas <= 5", true),
            (
                "has(object.metadata.labels) && 'env' in object.metadata.labels",
                true,
            ),
            ("object.metadata.name.startsWith('web-')", true),
            (
                "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.local/'))",
                true,
            ),
            (
                "object.spec.template.spec.containers.exists(c, c.name == 'sidecar')",
                false,
            ),
            ("has(object.spec.paused)", false),
            ("object.metadata.name.upperAscii() == 'WEB-1'", true),
            ("'a,b,c'.split(',').join('-') == 'a-b-c'", true),
            (
                "[1, 2, 3].sum() == 6 && [1, 2, 3].isSorted() && ![2, 1].isSorted()",
                true,
            ),
            ("object.metadata.name.matches('^web-[0-9]+$')", true),
            ("size(object.spec.template.spec.containers) == 1", true),
            (
                "'  x '.trim() == 'x' && 'abcb'.indexOf('b') == 1 && 'abcb'.lastIndexOf('b') == 3",
                true,
            ),
        ] {
            assert_eq!(eval(src, deploy.clone()), Ok(Cel::Bool(want)), "{src}");
        }
        assert!(eval("object.spec.missing > 1", deploy.clone()).is_err());
        assert!(
            Expr::compile("object.spec.replicas <=")
                .unwrap_err()
                .starts_with("compilation failed:")
        );
        assert!(Expr::compile("   ").is_err());
        assert_eq!(
            to_json(&eval("{'a': [1, 'x']}", deploy).unwrap()),
            json!({"a": [1, "x"]})
        );
    }
}
