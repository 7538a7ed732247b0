//! YAML text to JSON with its cost bounded, for specs that come from outside (OpenAPI).
//!
//! `yaml_rust2::YamlLoader` expands every alias by copying the anchored node and reads
//! nested collections recursively: a 1.5 KB "billion laughs" document (anchors that
//! refer to anchors nine times each) ran for seconds and took gigabytes, and a
//! 100,000-deep `[[[…` overflows the stack. Here the parser's events are pulled one by
//! one and built into JSON directly; every node counts against [`YamlLimits::max_nodes`]
//! *after* alias expansion (an alias costs the size of what it names, before it is
//! copied) and nesting stops at [`YamlLimits::max_depth`], so a hostile document is
//! refused after reading no more of it than it takes to cross a limit.

use serde_json::{Map, Value};
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::TScalarStyle;
use yaml_rust2::Yaml;

/// Bounds on one document.
#[derive(Debug, Clone, Copy)]
pub struct YamlLimits {
    /// The most nodes (scalars, sequences, mappings) the document may hold once its
    /// aliases are expanded. Aliases may copy at most a tenth of it: specs reuse a
    /// few blocks, and a bomb is then refused after little work.
    pub max_nodes: usize,
    /// The deepest nesting of sequences and mappings.
    pub max_depth: usize,
}

/// A collection being built, with the anchor it will be recorded under.
enum Open {
    Seq(Vec<Value>, usize, usize),
    Map(Map<String, Value>, Option<String>, usize, usize),
}

/// The first document of `text` as JSON; `Err` says what was wrong, in words.
pub fn to_json(text: &str, limits: YamlLimits) -> Result<Value, String> {
    let mut parser = Parser::new_from_str(text);
    // Anchored nodes by id, with their expanded sizes.
    let mut anchors: std::collections::HashMap<usize, (Value, usize)> = Default::default();
    let mut stack: Vec<Open> = Vec::new();
    let mut nodes = 0usize;
    let mut copied = 0usize;
    let copy_limits = YamlLimits {
        max_nodes: limits.max_nodes / 10,
        ..limits
    };
    loop {
        let (event, mark) = parser.next_token().map_err(|e| format!("YAML: {e}"))?;
        let at = || format!("line {} column {}", mark.line(), mark.col() + 1);
        let (value, anchor, size) = match event {
            Event::StreamEnd | Event::DocumentEnd => break,
            Event::Nothing | Event::StreamStart | Event::DocumentStart => continue,
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if stack.len() >= limits.max_depth {
                    return Err(format!(
                        "YAML: nested deeper than {} levels at {}",
                        limits.max_depth,
                        at()
                    ));
                }
                count(&mut nodes, 1, limits, &at)?;
                stack.push(match event {
                    Event::SequenceStart(..) => Open::Seq(Vec::new(), anchor, nodes),
                    _ => Open::Map(Map::new(), None, anchor, nodes),
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(items, anchor, start)) => {
                    (Value::Array(items), anchor, nodes - start + 1)
                }
                Some(Open::Map(m, _, anchor, start)) => {
                    (Value::Object(m), anchor, nodes - start + 1)
                }
                None => return Err(format!("YAML: an unbalanced end at {}", at())),
            },
            Event::Scalar(text, style, anchor, tag) => {
                count(&mut nodes, 1, limits, &at)?;
                let y = scalar(text, style, tag.as_ref());
                if let Some(Open::Map(_, key @ None, ..)) = stack.last_mut() {
                    // A key keeps its text as written (`1.0` stays "1.0").
                    *key = Some(key_text(y).map_err(|e| format!("{e} at {}", at()))?);
                    continue;
                }
                (json(y).map_err(|e| format!("{e} at {}", at()))?, anchor, 1)
            }
            Event::Alias(id) => {
                let Some((value, size)) = anchors.get(&id) else {
                    return Err(format!("YAML: an alias to an unknown anchor at {}", at()));
                };
                count(&mut copied, *size, copy_limits, &at)?;
                count(&mut nodes, *size, limits, &at)?;
                (value.clone(), 0, *size)
            }
        };
        if anchor > 0 {
            // Keeping the anchored node is a copy too.
            count(&mut copied, size, copy_limits, &at)?;
            anchors.insert(anchor, (value.clone(), size));
        }
        match stack.last_mut() {
            None => return Ok(value),
            Some(Open::Seq(items, ..)) => items.push(value),
            Some(Open::Map(m, key, ..)) => match key.take() {
                Some(k) => {
                    m.insert(k, value);
                }
                None => match value {
                    Value::String(s) => *key = Some(s),
                    Value::Null => *key = Some("null".into()),
                    Value::Bool(_) | Value::Number(_) => *key = Some(value.to_string()),
                    _ => return Err(format!("YAML: a mapping key is not a scalar at {}", at())),
                },
            },
        }
    }
    Err("the document is empty".into())
}

fn count(
    nodes: &mut usize,
    more: usize,
    limits: YamlLimits,
    at: &dyn Fn() -> String,
) -> Result<(), String> {
    *nodes = nodes.saturating_add(more);
    if *nodes > limits.max_nodes {
        return Err(format!(
            "YAML: more than {} nodes once aliases are expanded (at {}); a larger spec \
             needs a higher max_spec_nodes (aliases may copy a tenth of it)",
            limits.max_nodes,
            at()
        ));
    }
    Ok(())
}

/// A scalar as `yaml_rust2`'s loader reads it (YAML 1.2 core schema: `no` stays a
/// string).
fn scalar(text: String, style: TScalarStyle, tag: Option<&Tag>) -> Yaml {
    if style != TScalarStyle::Plain {
        return Yaml::String(text);
    }
    match tag {
        Some(Tag { handle, suffix }) if handle == "tag:yaml.org,2002:" => match suffix.as_str() {
            "bool" => match text.as_str() {
                "true" | "True" | "TRUE" => Yaml::Boolean(true),
                "false" | "False" | "FALSE" => Yaml::Boolean(false),
                _ => Yaml::BadValue,
            },
            "int" => text.parse::<i64>().map_or(Yaml::BadValue, Yaml::Integer),
            "float" => match text.parse::<f64>() {
                Ok(_) => Yaml::Real(text),
                Err(_) => Yaml::BadValue,
            },
            "null" => match text.as_str() {
                "~" | "null" => Yaml::Null,
                _ => Yaml::BadValue,
            },
            _ => Yaml::String(text),
        },
        Some(_) => Yaml::String(text),
        None => Yaml::from_str(&text),
    }
}

/// A scalar in JSON; a float that JSON cannot hold (`.inf`, `.nan`) stays text.
fn json(y: Yaml) -> Result<Value, String> {
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(s) => match s.parse::<f64>() {
            Ok(f) if f.is_finite() => Value::from(f),
            _ => Value::String(s),
        },
        Yaml::String(s) => Value::String(s),
        _ => return Err("YAML: a scalar that does not match its tag".into()),
    })
}

/// A mapping key as text.
fn key_text(y: Yaml) -> Result<String, String> {
    Ok(match y {
        Yaml::String(s) | Yaml::Real(s) => s,
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Null => "null".into(),
        _ => return Err("YAML: a mapping key that does not match its tag".into()),
    })
}
