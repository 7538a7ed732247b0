//! One OpenAPI operation read into what its tool needs: parameters with their location
//! and style, the request body's kind, the tool's name, description and argument schema.

use super::*;

// ---------------------------------------------------------------------------------
// Operations

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

impl Location {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Form,
    Simple,
    Label,
    Matrix,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

#[derive(Debug, Clone)]
pub(super) struct Param {
    /// The argument's name (the property in the tool's schema).
    pub(super) prop: String,
    /// The name on the wire.
    pub(super) name: String,
    pub(super) location: Location,
    pub(super) style: Style,
    pub(super) explode: bool,
    /// `content` instead of `schema`: the value is sent as JSON text.
    pub(super) json: bool,
    /// `allowReserved`: reserved characters are sent unencoded in a query.
    pub(super) allow_reserved: bool,
}

#[derive(Debug, Clone)]
pub(super) enum BodyKind {
    Json,
    Form,
    Text,
    Multipart(Multipart),
}

/// How a `multipart/form-data` body's properties become parts.
#[derive(Debug, Clone, Default)]
pub(super) struct Multipart {
    /// Properties sent as files (`format: binary`, `contentMediaType`): the
    /// argument's text is the file's content, the property name its file name.
    pub(super) files: HashSet<String>,
    /// `encoding.<property>.contentType` from the spec (the first, when it lists
    /// several), checked to be a MIME type.
    pub(super) content_types: std::collections::HashMap<String, String>,
}

/// One part of a multipart body, ready to send.
#[derive(Debug)]
pub(super) struct PartSpec {
    pub(super) name: String,
    pub(super) data: Vec<u8>,
    pub(super) file_name: Option<String>,
    pub(super) content_type: Option<String>,
}

/// A request body: bytes with the Content-Type already set, or multipart parts.
pub(super) enum Payload {
    Bytes(Vec<u8>),
    Multipart(Vec<PartSpec>),
}

pub(super) fn is_mime(ct: &str) -> bool {
    reqwest::multipart::Part::text("").mime_str(ct).is_ok()
}

impl Multipart {
    /// The parts of `body` (an object): scalars as text parts, arrays of scalars as
    /// repeated parts, objects and arrays of objects as JSON parts (OpenAPI's default
    /// encodings), file properties as file parts.
    pub(super) fn parts(&self, body: &Value) -> Result<Vec<PartSpec>, String> {
        let Value::Object(o) = body else {
            return Err("a multipart/form-data body must be an object of its fields".into());
        };
        let json_ct = || Some("application/json".to_string());
        let mut out = Vec::new();
        for (name, v) in o {
            let ct = self.content_types.get(name).cloned();
            let file = self.files.contains(name);
            let mut part = |data: Vec<u8>, ct: Option<String>| {
                out.push(PartSpec {
                    name: name.clone(),
                    data,
                    file_name: file.then(|| name.clone()),
                    content_type: ct.or_else(|| file.then(|| "application/octet-stream".into())),
                });
            };
            let as_json = |v: &Value| serde_json::to_vec(v).expect("a Value always serialises");
            match v {
                Value::Null => {}
                Value::Object(_) => part(as_json(v), ct.or_else(json_ct)),
                Value::Array(a) if a.iter().any(|x| x.is_object() || x.is_array()) => {
                    part(as_json(v), ct.or_else(json_ct))
                }
                Value::Array(a) => {
                    for x in a {
                        part(scalar(x).into_bytes(), ct.clone());
                    }
                }
                other => part(scalar(other).into_bytes(), ct),
            }
        }
        Ok(out)
    }

    /// Learns the files and encodings from the resolved body schema and the media
    /// object, and says in the schema how a file is given.
    pub(super) fn learn(&mut self, schema: &mut Value, media: &Value, here: &str) {
        if let Some(Value::Object(enc)) = media.get("encoding") {
            for (k, e) in enc {
                let Some(ct) = e.get("contentType").and_then(Value::as_str) else {
                    continue;
                };
                let first = ct.split(',').next().unwrap_or("").trim();
                if is_mime(first) && !first.contains('*') {
                    self.content_types.insert(k.clone(), first.to_string());
                } else {
                    log::warn!(
                        "openapi: {here}: encoding.{k}.contentType {ct:?} is not a MIME \
                         type; the part is sent with the default"
                    );
                }
            }
        }
        let Some(Value::Object(props)) = schema.get_mut("properties") else {
            return;
        };
        for (k, p) in props.iter_mut() {
            let Value::Object(p) = p else { continue };
            let binary = p.get("format").and_then(Value::as_str) == Some("binary")
                || p.contains_key("contentMediaType");
            if !binary {
                continue;
            }
            self.files.insert(k.clone());
            let note = "(sent as a file: this text is its content)";
            let text = match p.get("description").and_then(Value::as_str) {
                Some(d) if !d.trim().is_empty() => format!("{} {note}", d.trim()),
                _ => note.to_string(),
            };
            p.insert("description".into(), Value::String(text));
        }
    }
}

pub(super) fn multipart_form(parts: Vec<PartSpec>) -> reqwest::multipart::Form {
    let mut form = reqwest::multipart::Form::new();
    for p in parts {
        let mut part = match p.content_type {
            // Every content type here passed `is_mime` (or is one of ours).
            Some(ct) if is_mime(&ct) => reqwest::multipart::Part::bytes(p.data)
                .mime_str(&ct)
                .expect("checked by is_mime"),
            _ => reqwest::multipart::Part::bytes(p.data),
        };
        if let Some(f) = p.file_name {
            part = part.file_name(f);
        }
        form = form.part(p.name, part);
    }
    form
}

#[derive(Debug, Clone)]
pub(super) struct Body {
    pub(super) content_type: String,
    pub(super) kind: BodyKind,
}

pub(super) struct Operation {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) parameters: Value,
    pub(super) params: Vec<Param>,
    pub(super) body: Option<Body>,
}

pub(super) enum Built {
    Op(Box<Operation>),
    Skip(String),
}

/// A parameter as the document declares it: name, location, object.
type RawParam<'d> = (String, String, &'d Map<String, Value>);

pub(super) fn build_operation(
    doc: &Doc<'_>,
    method: &Method,
    path: &str,
    item: &Map<String, Value>,
    op: &Map<String, Value>,
    here: &str,
) -> Result<Built, OpenApiError> {
    let raw = declared_params(doc, item, op, here)?;
    let mut args = Arguments::default();
    // The request body first: it owns the `body` argument.
    let body = match args.request_body(doc, op, here)? {
        Ok(body) => body,
        Err(skip) => return Ok(Built::Skip(skip)),
    };
    for (pname, loc, p) in &raw {
        args.param(doc, pname, loc, p, here)?;
    }
    args.placeholders(path);
    Ok(Built::Op(Box::new(Operation {
        name: operation_name(method, path, op),
        description: operation_description(method, path, op),
        parameters: args.schema(body.as_ref().map(|(_, s)| s.clone())),
        params: args.params,
        body: body.map(|(b, _)| b),
    })))
}

/// A field of the operation as trimmed text, empty when absent.
fn op_str<'o>(op: &'o Map<String, Value>, k: &str) -> &'o str {
    op.get(k)
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("")
}

/// The tool's name: the `operationId`, else the method and path, sanitised.
fn operation_name(method: &Method, path: &str, op: &Map<String, Value>) -> String {
    let raw_name = match op_str(op, "operationId") {
        "" => format!("{}_{path}", method.as_str().to_ascii_lowercase()),
        id => id.to_string(),
    };
    // Runs of `_` made one here; the length rule (cut, hash) is the shared one.
    crate::tool::name::sanitize(&sanitize(&raw_name, usize::MAX))
}

/// The tool's description: summary and description (each once), marked when
/// deprecated; the method and path when the operation says nothing.
fn operation_description(method: &Method, path: &str, op: &Map<String, Value>) -> String {
    let mut description = String::new();
    if op.get("deprecated") == Some(&Value::Bool(true)) {
        description.push_str("(Deprecated) ");
    }
    let (summary, long) = (op_str(op, "summary"), op_str(op, "description"));
    description.push_str(summary);
    if !long.is_empty() && long != summary {
        if !summary.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str(long);
    }
    if summary.is_empty() && long.is_empty() {
        description.push_str(&format!("{} {path}", method.as_str()));
    }
    cut_chars(&description, MAX_DESCRIPTION_CHARS)
}

/// Path-level parameters, overridden by the operation's (same name and location).
fn declared_params<'d>(
    doc: &'d Doc<'_>,
    item: &'d Map<String, Value>,
    op: &'d Map<String, Value>,
    here: &str,
) -> Result<Vec<RawParam<'d>>, OpenApiError> {
    let mut raw: Vec<RawParam<'d>> = Vec::new();
    for list in [item.get("parameters"), op.get("parameters")] {
        let Some(Value::Array(list)) = list else {
            continue;
        };
        for p in list {
            let p = doc.deref(p, here)?;
            let Some(p) = p.as_object() else { continue };
            let (Some(n), Some(l)) = (
                p.get("name").and_then(Value::as_str),
                p.get("in").and_then(Value::as_str),
            ) else {
                log::warn!("openapi: {here}: a parameter without `name` / `in` is ignored");
                continue;
            };
            raw.retain(|(rn, rl, _)| !(rn == n && rl == l));
            raw.push((n.to_string(), l.to_string(), p));
        }
    }
    Ok(raw)
}

/// A fresh walk of a schema's references, with the whole budget.
fn schema_walk() -> SchemaWalk {
    SchemaWalk {
        stack: Vec::new(),
        budget: REF_BUDGET,
        depth: 0,
    }
}

/// The tool's arguments as they are collected: one property per parameter (and
/// `body`), each name taken once.
#[derive(Default)]
struct Arguments {
    taken: HashSet<String>,
    properties: Map<String, Value>,
    required: Vec<Value>,
    params: Vec<Param>,
}

impl Arguments {
    /// The request body and its schema (`None` without one); `Err` with the reason
    /// the operation is skipped when a required body has no supported media type.
    fn request_body(
        &mut self,
        doc: &Doc<'_>,
        op: &Map<String, Value>,
        here: &str,
    ) -> Result<Result<Option<(Body, Value)>, String>, OpenApiError> {
        let Some(rb) = op.get("requestBody") else {
            return Ok(Ok(None));
        };
        let rb = doc.deref(rb, here)?;
        let body_required = rb.get("required") == Some(&Value::Bool(true));
        let content = rb.get("content").and_then(Value::as_object);
        let Some((content_type, mut kind, media)) = content.and_then(choose_media) else {
            let types: Vec<&String> = content.map(|c| c.keys().collect()).unwrap_or_default();
            if body_required {
                return Ok(Err(format!(
                    "its request body is required and none of its media types {types:?} \
                     is supported (JSON, form, multipart, text)"
                )));
            }
            return Ok(Ok(None));
        };
        let mut s = match media.get("schema") {
            Some(s) => doc.schema(s, &mut schema_walk(), here)?,
            None => match kind {
                BodyKind::Text => json!({"type": "string"}),
                _ => json!({}),
            },
        };
        if let BodyKind::Multipart(m) = &mut kind {
            m.learn(&mut s, media, here);
        }
        if let (Some(d), Value::Object(o)) = (rb.get("description").and_then(Value::as_str), &mut s)
        {
            o.insert("description".into(), Value::String(d.to_string()));
        }
        self.taken.insert("body".into());
        if body_required {
            self.required.push(Value::String("body".into()));
        }
        Ok(Ok(Some((Body { content_type, kind }, s))))
    }

    /// One declared parameter: its property (schema, description, examples) and how
    /// it is sent. Parameters in an unknown location, and the headers the request
    /// sets itself, are left out.
    fn param(
        &mut self,
        doc: &Doc<'_>,
        pname: &str,
        loc: &str,
        p: &Map<String, Value>,
        here: &str,
    ) -> Result<(), OpenApiError> {
        let location = match loc {
            "path" => Location::Path,
            "query" => Location::Query,
            "header" => Location::Header,
            "cookie" => Location::Cookie,
            other => {
                log::warn!("openapi: {here}: parameter {pname:?} in {other:?} is ignored");
                return Ok(());
            }
        };
        if location == Location::Header
            && ["accept", "content-type", "authorization"]
                .contains(&pname.to_ascii_lowercase().as_str())
        {
            return Ok(());
        }
        let (schema, json_content) = match (p.get("schema"), p.get("content")) {
            (Some(s), _) => (doc.schema(s, &mut schema_walk(), here)?, false),
            (None, Some(Value::Object(c))) => match c.values().next().and_then(|m| m.get("schema"))
            {
                Some(s) => (doc.schema(s, &mut schema_walk(), here)?, true),
                None => (json!({}), true),
            },
            _ => (json!({"type": "string"}), false),
        };
        let prop = unique_prop(pname, location, &mut self.taken);
        let schema = param_schema(schema, p, pname, &prop, location);
        let style = param_style(p, location);
        let explode = match p.get("explode") {
            Some(Value::Bool(b)) => *b,
            _ => style == Style::Form,
        };
        if location == Location::Path || p.get("required") == Some(&Value::Bool(true)) {
            self.required.push(Value::String(prop.clone()));
        }
        self.properties.insert(prop.clone(), Value::Object(schema));
        self.params.push(Param {
            prop,
            name: pname.to_owned(),
            location,
            style,
            explode,
            json: json_content,
            allow_reserved: p.get("allowReserved") == Some(&Value::Bool(true)),
        });
        Ok(())
    }

    /// A `{placeholder}` of the path no parameter declares: ask for it anyway.
    fn placeholders(&mut self, path: &str) {
        for placeholder in path_placeholders(path) {
            if self
                .params
                .iter()
                .any(|p| p.location == Location::Path && p.name == placeholder)
            {
                continue;
            }
            let prop = unique_prop(&placeholder, Location::Path, &mut self.taken);
            self.properties.insert(
                prop.clone(),
                json!({"type": "string", "description": "(path parameter)"}),
            );
            self.required.push(Value::String(prop.clone()));
            self.params.push(Param {
                prop,
                name: placeholder,
                location: Location::Path,
                style: Style::Simple,
                explode: false,
                json: false,
                allow_reserved: false,
            });
        }
    }

    /// The tool's argument schema: an object of the properties, `body` last.
    fn schema(&mut self, body_schema: Option<Value>) -> Value {
        let mut properties = std::mem::take(&mut self.properties);
        if let Some(s) = body_schema {
            properties.insert("body".into(), s);
        }
        let mut parameters = Map::new();
        parameters.insert("type".into(), "object".into());
        parameters.insert("properties".into(), Value::Object(properties));
        if !self.required.is_empty() {
            let required = std::mem::take(&mut self.required);
            parameters.insert("required".into(), Value::Array(required));
        }
        parameters.insert("additionalProperties".into(), Value::Bool(false));
        Value::Object(parameters)
    }
}

/// A parameter's property schema: its own schema with the description (the
/// parameter's, else the schema's) followed by where it goes, and the
/// `deprecated` and `example` the parameter declares.
fn param_schema(
    schema: Value,
    p: &Map<String, Value>,
    pname: &str,
    prop: &str,
    location: Location,
) -> Map<String, Value> {
    let mut schema = match schema {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    let mut note = format!("({} parameter", location.as_str());
    if prop != pname {
        note.push_str(&format!(" {pname:?}"));
    }
    note.push(')');
    let text = match p
        .get("description")
        .and_then(Value::as_str)
        .or_else(|| schema.get("description").and_then(Value::as_str))
    {
        Some(d) if !d.trim().is_empty() => format!("{} {note}", d.trim()),
        _ => note,
    };
    schema.insert("description".into(), Value::String(text));
    if p.get("deprecated") == Some(&Value::Bool(true)) {
        schema.insert("deprecated".into(), Value::Bool(true));
    }
    if let Some(ex) = p.get("example") {
        schema
            .entry("examples")
            .or_insert_with(|| Value::Array(vec![ex.clone()]));
    }
    schema
}

/// How a parameter is serialised: its `style`, else the location's default.
fn param_style(p: &Map<String, Value>, location: Location) -> Style {
    match p.get("style").and_then(Value::as_str) {
        Some("form") => Style::Form,
        Some("simple") => Style::Simple,
        Some("label") => Style::Label,
        Some("matrix") => Style::Matrix,
        Some("spaceDelimited") => Style::SpaceDelimited,
        Some("pipeDelimited") => Style::PipeDelimited,
        Some("deepObject") => Style::DeepObject,
        _ => match location {
            Location::Query | Location::Cookie => Style::Form,
            Location::Path | Location::Header => Style::Simple,
        },
    }
}

/// The media type a request body is sent as: JSON first, then form, then text.
pub(super) fn choose_media(content: &Map<String, Value>) -> Option<(String, BodyKind, &Value)> {
    let essence = |k: &str| {
        k.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    };
    let json_like = |e: &str| {
        e == "application/json"
            || e.ends_with("+json")
            || e.ends_with("/json")
            || e == "*/*"
            || e == "application/*"
    };
    let pick = |pred: &dyn Fn(&str) -> bool| content.iter().find(|(k, _)| pred(&essence(k)));
    if let Some((k, v)) = pick(&|e| e == "application/json") {
        return Some((k.clone(), BodyKind::Json, v));
    }
    if let Some((k, v)) = pick(&json_like) {
        let e = essence(k);
        let ct = if e.contains('*') {
            "application/json".into()
        } else {
            k.clone()
        };
        return Some((ct, BodyKind::Json, v));
    }
    if let Some((k, v)) = pick(&|e| e == "application/x-www-form-urlencoded") {
        return Some((k.clone(), BodyKind::Form, v));
    }
    if let Some((k, v)) = pick(&|e| e == "multipart/form-data") {
        return Some((k.clone(), BodyKind::Multipart(Multipart::default()), v));
    }
    if let Some((k, v)) = pick(&|e| e.starts_with("text/") && !e.contains('*')) {
        return Some((k.clone(), BodyKind::Text, v));
    }
    None
}

pub(super) fn path_placeholders(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(i) = rest.find('{') {
        let Some(j) = rest[i..].find('}') else { break };
        let name = &rest[i + 1..i + j];
        if !name.is_empty() && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
        rest = &rest[i + j + 1..];
    }
    out
}

/// `[a-zA-Z0-9_-]{1,max}`: other characters become `_`, runs of `_` one.
pub(super) fn sanitize(raw: &str, max: usize) -> String {
    let mut s = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        if c == '_' && s.ends_with('_') {
            continue;
        }
        s.push(c);
    }
    let s = s.trim_matches('_');
    let mut s = if s.is_empty() {
        "operation".to_string()
    } else {
        s.to_string()
    };
    s.truncate(max);
    s
}

/// A property name for a parameter: its own when it fits `[a-zA-Z0-9_.-]{1,64}` and is
/// free, else a sanitised one, then one with the location, then a number.
pub(super) fn unique_prop(name: &str, location: Location, taken: &mut HashSet<String>) -> String {
    let fits = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    let base = if fits {
        name.to_string()
    } else {
        sanitize(name, 56)
    };
    let mut candidate = base.clone();
    if taken.contains(&candidate) {
        candidate = format!("{base}_{}", location.as_str());
    }
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}
