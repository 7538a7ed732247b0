//! The spec as a document: local `$ref`s resolved and inlined, and schemas made valid
//! JSON Schema 2020-12 (the dialect the executor checks arguments with).

use super::*;

// ---------------------------------------------------------------------------------
// The document: references and schemas

pub(super) struct Doc<'a> {
    pub(super) root: &'a Value,
}

pub(super) struct SchemaWalk {
    /// The references being expanded, outermost first.
    pub(super) stack: Vec<String>,
    pub(super) budget: usize,
    pub(super) depth: usize,
}

impl<'a> Doc<'a> {
    /// The value a local reference points at.
    pub(super) fn lookup(&self, r: &str, at: &str) -> Result<&'a Value, OpenApiError> {
        let Some(fragment) = r.strip_prefix('#') else {
            return Err(OpenApiError::Invalid(format!(
                "{at}: $ref {r:?} points outside this document; only local references \
                 (\"#/components/...\") are supported — bundle the spec into one file first"
            )));
        };
        let pointer = percent_decode(fragment);
        self.root.pointer(&pointer).ok_or_else(|| {
            OpenApiError::Invalid(format!(
                "{at}: $ref {r:?} points at nothing in the document"
            ))
        })
    }

    /// Follows `$ref`s from `v` (a path item, parameter or request body) to an object.
    pub(super) fn deref(&self, mut v: &'a Value, at: &str) -> Result<&'a Value, OpenApiError> {
        let mut seen: Vec<&str> = Vec::new();
        while let Some(Value::String(r)) = v.get("$ref") {
            if seen.contains(&r.as_str()) {
                return Err(OpenApiError::Invalid(format!(
                    "{at}: $ref {r:?} refers to itself"
                )));
            }
            seen.push(r);
            v = self.lookup(r, at)?;
        }
        Ok(v)
    }

    /// The first server URL of `servers`, variables at their defaults, resolved
    /// against the spec's URL when relative. `None` when there are no servers (or only
    /// OpenAPI's default `/` and no spec URL to resolve it against).
    /// `top` marks the spec's own `servers`, whose absence means OpenAPI's default
    /// server `/`; an operation's or path item's absent `servers` defer to it.
    pub(super) fn server_base(
        &self,
        servers: Option<&Value>,
        at: &str,
        top: bool,
        options: &OpenApiOptions,
    ) -> Result<Option<String>, OpenApiError> {
        let first = servers.and_then(Value::as_array).and_then(|a| a.first());
        let Some(server) = first else {
            return Ok(match &options.spec_url {
                Some(spec_url) if top => Some(resolve(spec_url, "/")?),
                _ => None,
            });
        };
        let mut url = server
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("/")
            .to_string();
        if let Some(Value::Object(vars)) = server.get("variables") {
            for (name, var) in vars {
                let default = match var.get("default") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => continue,
                };
                url = url.replace(&format!("{{{name}}}"), &default);
            }
        }
        if url.contains('{') {
            return Err(OpenApiError::Config(format!(
                "{at}: the server URL {url:?} has a variable without a default; pass base_url"
            )));
        }
        if url.starts_with("http://") || url.starts_with("https://") {
            return Ok(Some(url));
        }
        match &options.spec_url {
            Some(spec_url) => Ok(Some(resolve(spec_url, &url)?)),
            None => Err(OpenApiError::Config(format!(
                "{at}: the server URL {url:?} is relative and the spec was not fetched from \
                 a URL to resolve it against; pass base_url (e.g. \"https://host{}\")",
                if url.starts_with('/') {
                    url.as_str()
                } else {
                    "/"
                }
            ))),
        }
    }

    /// `v` as a self-contained JSON Schema 2020-12 (see the module docs).
    pub(super) fn schema(
        &self,
        v: &Value,
        w: &mut SchemaWalk,
        at: &str,
    ) -> Result<Value, OpenApiError> {
        let Value::Object(m) = v else {
            return Ok(v.clone());
        };
        if w.depth >= MAX_SCHEMA_DEPTH {
            return Ok(json!({"description": "(nested too deeply to show)"}));
        }
        if let Some(Value::String(r)) = m.get("$ref") {
            let target = self.lookup(r, at)?;
            let short = r.rsplit('/').next().unwrap_or(r);
            if w.stack.iter().any(|s| s == r) || w.budget == 0 {
                let mut stub = Map::new();
                if let Some(t) = target.get("type") {
                    stub.insert("type".into(), t.clone());
                }
                let why = if w.budget == 0 {
                    format!("a {short} (not expanded: the schema is too large)")
                } else {
                    format!("a {short} (recursive: the same structure as the enclosing {short})")
                };
                stub.insert("description".into(), Value::String(why));
                return Ok(Value::Object(stub));
            }
            w.budget -= 1;
            w.stack.push(r.clone());
            w.depth += 1;
            let resolved = self.schema(target, w, at);
            w.stack.pop();
            w.depth -= 1;
            let mut resolved = resolved?;
            let siblings: Map<String, Value> = m
                .iter()
                .filter(|(k, _)| k.as_str() != "$ref")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if siblings.is_empty() {
                return Ok(resolved);
            }
            let nullable = siblings.get("nullable") == Some(&Value::Bool(true));
            let sib = self.schema(&Value::Object(siblings), w, at)?;
            let annotations_only = sib.as_object().is_some_and(|s| {
                s.keys().all(|k| {
                    matches!(
                        k.as_str(),
                        "description"
                            | "title"
                            | "default"
                            | "examples"
                            | "deprecated"
                            | "readOnly"
                            | "writeOnly"
                            | "type"
                    )
                })
            });
            return Ok(match (&mut resolved, sib) {
                (Value::Object(o), Value::Object(s)) if annotations_only => {
                    for (k, v) in s {
                        if k != "type" {
                            o.insert(k, v);
                        }
                    }
                    if nullable {
                        make_nullable(o);
                    }
                    resolved
                }
                (_, sib) => json!({"allOf": [resolved, sib]}),
            });
        }
        w.depth += 1;
        let out = self.schema_object(m, w, at);
        w.depth -= 1;
        out.map(Value::Object)
    }

    pub(super) fn schema_object(
        &self,
        m: &Map<String, Value>,
        w: &mut SchemaWalk,
        at: &str,
    ) -> Result<Map<String, Value>, OpenApiError> {
        let mut out = Map::new();
        for (k, v) in m {
            match k.as_str() {
                "properties" | "patternProperties" | "dependentSchemas" => {
                    if let Value::Object(props) = v {
                        let mut o = Map::new();
                        for (pk, pv) in props {
                            o.insert(pk.clone(), self.schema(pv, w, at)?);
                        }
                        out.insert(k.clone(), Value::Object(o));
                    }
                }
                "additionalProperties"
                | "items"
                | "additionalItems"
                | "contains"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "contentSchema" => {
                    let s = match v {
                        Value::Array(a) if k == "items" => {
                            // Draft-4-style tuple `items` → `prefixItems`.
                            let items = a
                                .iter()
                                .map(|i| self.schema(i, w, at))
                                .collect::<Result<Vec<_>, _>>()?;
                            out.insert("prefixItems".into(), Value::Array(items));
                            continue;
                        }
                        other => self.schema(other, w, at)?,
                    };
                    out.insert(k.clone(), s);
                }
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                    if let Value::Array(a) = v {
                        let items = a
                            .iter()
                            .map(|i| self.schema(i, w, at))
                            .collect::<Result<Vec<_>, _>>()?;
                        out.insert(k.clone(), Value::Array(items));
                    }
                }
                "example" => {
                    if !m.contains_key("examples") {
                        out.insert("examples".into(), Value::Array(vec![v.clone()]));
                    }
                }
                "examples" => {
                    if v.is_array() {
                        out.insert(k.clone(), v.clone());
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => match v {
                    // 3.0 (draft 4): a flag on `minimum` / `maximum`.
                    Value::Bool(true) => {
                        let bound = if k == "exclusiveMinimum" {
                            "minimum"
                        } else {
                            "maximum"
                        };
                        if let Some(b) = m.get(bound) {
                            out.insert(k.clone(), b.clone());
                        }
                    }
                    Value::Bool(false) => {}
                    other => {
                        out.insert(k.clone(), other.clone());
                    }
                },
                "nullable" | "xml" | "externalDocs" | "discriminator" | "$id" | "$schema"
                | "$defs" | "definitions" | "$anchor" | "$dynamicAnchor" | "$comment" => {}
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        for (flag, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if m.get(flag) == Some(&Value::Bool(true)) && out.contains_key(flag) {
                out.remove(bound);
            }
        }
        if m.get("nullable") == Some(&Value::Bool(true)) {
            make_nullable(&mut out);
        }
        // The server sets read-only properties: the model must not be asked for them.
        let read_only: Vec<String> = match out.get("properties") {
            Some(Value::Object(props)) => props
                .iter()
                .filter(|(_, s)| s.get("readOnly") == Some(&Value::Bool(true)))
                .map(|(k, _)| k.clone())
                .collect(),
            _ => Vec::new(),
        };
        if !read_only.is_empty() {
            if let Some(Value::Object(props)) = out.get_mut("properties") {
                for k in &read_only {
                    props.remove(k);
                }
            }
            if let Some(Value::Array(req)) = out.get_mut("required") {
                req.retain(|r| !r.as_str().is_some_and(|r| read_only.iter().any(|k| k == r)));
            }
        }
        Ok(out)
    }
}

/// Lets `null` through a schema (3.0's `nullable: true`).
pub(super) fn make_nullable(o: &mut Map<String, Value>) {
    let null = Value::String("null".into());
    match o.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            o.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(a)) if !a.contains(&null) => a.push(null),
        _ => {}
    }
    if let Some(Value::Array(e)) = o.get_mut("enum") {
        if !e.contains(&Value::Null) {
            e.push(Value::Null);
        }
    }
}

pub(super) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn resolve(spec_url: &str, server: &str) -> Result<String, OpenApiError> {
    let base = reqwest::Url::parse(spec_url)
        .map_err(|e| OpenApiError::Config(format!("the spec URL {spec_url:?} is invalid: {e}")))?;
    base.join(server).map(|u| u.to_string()).map_err(|e| {
        OpenApiError::Config(format!(
            "cannot resolve the server URL {server:?} against {spec_url:?}: {e}"
        ))
    })
}
