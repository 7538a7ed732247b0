//! The body of a Messages API request, serialised straight from the request (a JSON
//! tree built first cloned every message of the history, and every tool's schema, for
//! every request). The history is planned as turns of blocks that borrow from the
//! messages, so that the prompt-caching breakpoint on the latest turn's last block is
//! a mark on the plan, not an edit of a tree.

use std::borrow::Cow;
use std::sync::Arc;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::{AnthropicChat, Structured, DEFAULT_MAX_TOKENS};
use crate::message::{Content, ContentPart, Message, MessageKind, ToolStatus};
use crate::model::{is_reasoning_block, BodyFields, ChatRequest, ResponseFormat};
use crate::tool::{ToolCall, ToolChoice, ToolDefinition};

/// The request body; see the module docs.
pub(super) struct Body<'a> {
    chat: &'a AnthropicChat,
    req: &'a ChatRequest,
    stream: bool,
    max_tokens: u32,
    system: Option<String>,
    turns: Vec<Turn<'a>>,
    /// The tool that carries a structured answer, after the request's tools.
    structured_tool: Option<Value>,
    tool_choice: Option<Value>,
}

impl<'a> Body<'a> {
    pub(super) fn new(
        chat: &'a AnthropicChat,
        req: &'a ChatRequest,
        stream: bool,
    ) -> (Body<'a>, Option<Structured>) {
        let thinking = req.extra.get("thinking").or(chat.thinking.as_ref());
        // `max_tokens` must exceed the thinking budget; the default leaves room for
        // an answer after it.
        let budget = thinking
            .and_then(|t| t.get("budget_tokens"))
            .and_then(Value::as_u64)
            .map_or(0, |b| b.min(u64::from(u32::MAX / 2)) as u32);
        let max_tokens = req
            .max_tokens
            .or(chat.settings.max_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS + budget);
        let (system, mut turns) = turns(&req.messages);
        if chat.prompt_caching {
            if let Some(turn) = turns.last_mut() {
                // The latest turn: its last block that may carry a breakpoint.
                turn.cache_at = turn.blocks.iter().rposition(|b| !b.is_reasoning());
            }
        }
        let mut choice = if req.tools.is_empty() {
            None
        } else {
            req.tool_choice.as_ref().map(ToolChoice::to_anthropic)
        };
        let mut structured = None;
        let mut answer_tool = None;
        if let Some(f) = &req.response_format {
            let (tool, s) = structured_tool(f);
            choice = Some(json!({"type": "tool", "name": s.name}));
            answer_tool = Some(tool);
            structured = Some(s);
        }
        let has_tools = !req.tools.is_empty() || answer_tool.is_some();
        let parallel = req
            .parallel_tool_calls
            .or(chat.settings.parallel_tool_calls);
        if has_tools && parallel == Some(false) {
            let mut c = choice.unwrap_or_else(|| json!({"type": "auto"}));
            if c["type"] != "none" {
                c["disable_parallel_tool_use"] = json!(true);
            }
            choice = Some(c);
        }
        let body = Body {
            chat,
            req,
            stream,
            max_tokens,
            system,
            turns,
            structured_tool: answer_tool,
            tool_choice: choice.filter(|_| has_tools),
        };
        (body, structured)
    }
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (chat, req) = (self.chat, self.req);
        let mut m = BodyFields::new(s, &req.extra)?;
        m.field("model", &chat.model)?;
        m.field("max_tokens", &self.max_tokens)?;
        if let Some(t) = &chat.thinking {
            m.field("thinking", t)?;
        }
        if let Some(text) = &self.system {
            if chat.prompt_caching {
                m.field("system", &[TextBlock { text, cache: true }])?;
            } else {
                m.field("system", text)?;
            }
        }
        m.field("messages", &self.turns)?;
        if !req.tools.is_empty() || self.structured_tool.is_some() {
            m.field(
                "tools",
                &Tools {
                    defs: &req.tools,
                    structured: self.structured_tool.as_ref(),
                    cache: chat.prompt_caching,
                },
            )?;
            if let Some(c) = &self.tool_choice {
                m.field("tool_choice", c)?;
            }
        }
        if let Some(t) = req.temperature.or(chat.settings.temperature) {
            m.field("temperature", &t)?;
        }
        if !req.stop.is_empty() {
            m.field("stop_sequences", &req.stop)?;
        }
        if self.stream {
            m.field("stream", &true)?;
        }
        m.end()
    }
}

/// A prompt-caching breakpoint (the default, 5-minute cache).
#[derive(Serialize)]
struct CacheControl {
    r#type: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl {
    r#type: "ephemeral",
};

/// A `text` block.
struct TextBlock<'a> {
    text: &'a str,
    cache: bool,
}

impl Serialize for TextBlock<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", "text")?;
        m.serialize_entry("text", self.text)?;
        if self.cache {
            m.serialize_entry("cache_control", &EPHEMERAL)?;
        }
        m.end()
    }
}

/// A block given as JSON (an image, a part passed verbatim, the structured-answer
/// tool), with a breakpoint added when `cache` is set (replacing one it has).
struct Marked<'a> {
    value: &'a Value,
    cache: bool,
}

impl Serialize for Marked<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::Object(o) if self.cache => {
                let mut m = s.serialize_map(None)?;
                for (k, v) in o.iter().filter(|(k, _)| *k != "cache_control") {
                    m.serialize_entry(k, v)?;
                }
                m.serialize_entry("cache_control", &EPHEMERAL)?;
                m.end()
            }
            v => v.serialize(s),
        }
    }
}

/// The `tools` list: the request's tools, then the structured-answer tool; the last
/// one carries a breakpoint when prompt caching is on.
struct Tools<'a> {
    defs: &'a [ToolDefinition],
    structured: Option<&'a Value>,
    cache: bool,
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            name: &'a str,
            description: &'a str,
            input_schema: &'a Value,
            #[serde(skip_serializing_if = "Option::is_none")]
            cache_control: Option<CacheControl>,
        }
        let last = self.defs.len() + usize::from(self.structured.is_some());
        let defs = self.defs.iter().enumerate().map(|(i, d)| {
            let cache = self.cache && i + 1 == last;
            Tool {
                name: &d.name,
                description: &d.description,
                input_schema: &d.parameters,
                cache_control: cache.then_some(EPHEMERAL),
            }
        });
        let mut seq = s.serialize_seq(Some(last))?;
        for d in defs {
            seq.serialize_element(&d)?;
        }
        if let Some(t) = self.structured {
            seq.serialize_element(&Marked {
                value: t,
                cache: self.cache,
            })?;
        }
        seq.end()
    }
}

/// One turn of the `messages` list (consecutive messages of one role merged).
pub(super) struct Turn<'a> {
    role: &'static str,
    blocks: Vec<Block<'a>>,
    /// The block that carries the prompt-caching breakpoint.
    cache_at: Option<usize>,
}

impl Serialize for Turn<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Blocks<'b, 'a>(&'b Turn<'a>);
        impl Serialize for Blocks<'_, '_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let turn = self.0;
                s.collect_seq(turn.blocks.iter().enumerate().map(|(i, block)| Cached {
                    block,
                    cache: turn.cache_at == Some(i),
                }))
            }
        }
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("role", self.role)?;
        m.serialize_entry("content", &Blocks(self))?;
        m.end()
    }
}

/// A content block, borrowing from the message it comes from.
enum Block<'a> {
    Text(&'a str),
    /// An image, or a part passed as it is (or translated).
    Json(Cow<'a, Value>),
    ToolUse {
        call: &'a ToolCall,
        input: Cow<'a, Value>,
    },
    ToolResult {
        id: &'a str,
        content: ResultContent<'a>,
        error: bool,
    },
}

/// What a `tool_result` block holds.
enum ResultContent<'a> {
    Empty,
    Text(Cow<'a, str>),
    /// Images (and other blocks) in a tool's result go as blocks.
    Blocks(Vec<Block<'a>>),
}

impl Block<'_> {
    fn is_reasoning(&self) -> bool {
        matches!(self, Block::Json(v) if is_reasoning_block(v))
    }
}

impl Serialize for Block<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Cached {
            block: self,
            cache: false,
        }
        .serialize(s)
    }
}

/// A block, with a prompt-caching breakpoint when `cache` is set.
struct Cached<'b, 'a> {
    block: &'b Block<'a>,
    cache: bool,
}

impl Serialize for Cached<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let cache = self.cache;
        let mut m = match self.block {
            Block::Text(text) => return TextBlock { text, cache }.serialize(s),
            Block::Json(value) => return Marked { value, cache }.serialize(s),
            Block::ToolUse { call, input } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "tool_use")?;
                m.serialize_entry("id", &call.id)?;
                m.serialize_entry("name", &call.name)?;
                m.serialize_entry("input", input)?;
                m
            }
            Block::ToolResult { id, content, error } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "tool_result")?;
                m.serialize_entry("tool_use_id", id)?;
                match content {
                    ResultContent::Empty => {}
                    ResultContent::Text(text) => m.serialize_entry("content", text)?,
                    ResultContent::Blocks(blocks) => m.serialize_entry("content", blocks)?,
                }
                if *error {
                    m.serialize_entry("is_error", &true)?;
                }
                m
            }
        };
        if cache {
            m.serialize_entry("cache_control", &EPHEMERAL)?;
        }
        m.end()
    }
}

/// The `system` text and the turns of the `messages` list: system messages joined,
/// tool results as `tool_result` blocks of a user turn, consecutive turns of one role
/// merged, empty turns dropped.
pub(super) fn turns(msgs: &[Arc<Message>]) -> (Option<String>, Vec<Turn<'_>>) {
    let mut system: Vec<String> = Vec::new();
    let mut turns: Vec<Turn<'_>> = Vec::new();
    for m in msgs {
        let (role, blocks) = match &m.kind {
            MessageKind::System => {
                let t = m.content.text();
                if !t.is_empty() {
                    system.push(t);
                }
                continue;
            }
            MessageKind::Human => ("user", content_blocks(&m.content)),
            MessageKind::Ai { tool_calls, .. } => {
                let mut b = content_blocks(&m.content);
                b.extend(tool_calls.iter().map(|call| Block::ToolUse {
                    call,
                    input: tool_input(call),
                }));
                ("assistant", b)
            }
            MessageKind::Tool {
                tool_call_id,
                status,
                ..
            } => {
                let content = match &m.content {
                    Content::Parts(parts)
                        if parts.iter().any(|p| !matches!(p, ContentPart::Text { .. })) =>
                    {
                        ResultContent::Blocks(content_blocks(&m.content))
                    }
                    c => match c.as_text() {
                        t if t.is_empty() => ResultContent::Empty,
                        t => ResultContent::Text(t),
                    },
                };
                let error = *status == ToolStatus::Error;
                let id = tool_call_id.as_str();
                ("user", vec![Block::ToolResult { id, content, error }])
            }
            MessageKind::Remove => continue,
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(t) if t.role == role => t.blocks.extend(blocks),
            _ => turns.push(Turn {
                role,
                blocks,
                cache_at: None,
            }),
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, turns)
}

/// A call's `input`: its arguments object (arguments kept as text are parsed; what is
/// not an object becomes `{}`, which the API requires).
fn tool_input(c: &ToolCall) -> Cow<'_, Value> {
    match &c.arguments {
        Value::Object(_) => Cow::Borrowed(&c.arguments),
        Value::String(s) => Cow::Owned(
            serde_json::from_str::<Value>(s)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({})),
        ),
        _ => Cow::Owned(json!({})),
    }
}

fn content_blocks(c: &Content) -> Vec<Block<'_>> {
    match c {
        Content::Text(s) if s.is_empty() => Vec::new(),
        Content::Text(s) => vec![Block::Text(s)],
        Content::Parts(parts) => parts.iter().filter_map(part_block).collect(),
    }
}

fn part_block(p: &ContentPart) -> Option<Block<'_>> {
    let image = |url: &str| Some(Block::Json(Cow::Owned(image_block(url))));
    match p {
        ContentPart::Text { text } if text.is_empty() => None,
        ContentPart::Text { text } => Some(Block::Text(text)),
        ContentPart::Image { url } => image(url),
        ContentPart::Json {
            value: Value::String(s),
        } if s.is_empty() => None,
        ContentPart::Json {
            value: Value::String(s),
        } => Some(Block::Text(s)),
        ContentPart::Json { value } => match value.get("type").and_then(Value::as_str) {
            // OpenAI-shaped image parts are translated; other parts pass verbatim.
            Some("image_url") => match value.get("image_url") {
                Some(Value::String(u)) => image(u),
                Some(o) => o.get("url").and_then(Value::as_str).and_then(image),
                None => None,
            },
            // langchain-core's standard image blocks (by URL or base64 data).
            Some("image") if value.get("source").is_none() => {
                match crate::model::images::standard_image_url(value) {
                    Some(url) => image(&url),
                    None => Some(Block::Json(Cow::Borrowed(value))),
                }
            }
            // Another provider's reasoning means nothing here (and is refused).
            Some("reasoning") => None,
            // A streamed chunk's block carries its position; the API refuses it.
            Some("thinking") if value.get("index").is_some() => {
                let mut v = value.clone();
                v.as_object_mut().map(|o| o.remove("index"));
                Some(Block::Json(Cow::Owned(v)))
            }
            _ => Some(Block::Json(Cow::Borrowed(value))),
        },
    }
}

fn image_block(url: &str) -> Value {
    if let Some(rest) = url.strip_prefix("data:") {
        if let Some((meta, data)) = rest.split_once(',') {
            let media = meta.trim_end_matches(";base64");
            return json!({"type": "image", "source":
                {"type": "base64", "media_type": media, "data": data}});
        }
    }
    json!({"type": "image", "source": {"type": "url", "url": url}})
}

/// The tool that carries a structured answer.
pub(super) fn structured_tool(f: &ResponseFormat) -> (Value, Structured) {
    let is_object = f.schema.get("type").and_then(Value::as_str) == Some("object");
    let schema = if is_object {
        f.schema.clone()
    } else {
        // A tool's input must be an object: wrap, keeping `$defs` at the root so that
        // `#/$defs/...` references still resolve.
        let mut inner = f.schema.clone();
        let mut root = Map::new();
        for k in ["$defs", "definitions"] {
            if let Some(d) = inner.as_object_mut().and_then(|o| o.remove(k)) {
                root.insert(k.into(), d);
            }
        }
        root.insert("type".into(), json!("object"));
        root.insert("properties".into(), json!({ "value": inner }));
        root.insert("required".into(), json!(["value"]));
        Value::Object(root)
    };
    let description = f
        .schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("Give the final answer in this structure.");
    (
        json!({"name": f.name, "description": description, "input_schema": schema}),
        Structured {
            name: f.name.clone(),
            wrapped: !is_object,
        },
    )
}
