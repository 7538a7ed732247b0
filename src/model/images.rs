//! Image parts as LangChain programs write them, read once for both providers.
//!
//! Besides OpenAI's `{"type": "image_url", "image_url": {"url"}}` (which the message
//! model parses into an image part), langchain-core has standard `image` blocks: by
//! URL (`{"type": "image", "url"}`) or by base64 data (`{"type": "image", "base64",
//! "mime_type"}`, and the older `{"type": "image", "source_type": "base64" | "url",
//! "data" | "url", "mime_type"}`). A provider that took them verbatim would refuse
//! them, so each provider's encoder asks here for the image's URL (a `data:` URL for
//! base64 data) and writes its own wire form of it.

use serde_json::Value;

/// The URL (or `data:` URL) of a langchain-core standard `image` block; `None` for
/// anything else, including Anthropic's own `{"type": "image", "source"}` blocks.
pub fn standard_image_url(part: &Value) -> Option<String> {
    if part.get("type").and_then(Value::as_str) != Some("image") || part.get("source").is_some() {
        return None;
    }
    let text = |k: &str| part.get(k).and_then(Value::as_str);
    let source_type = text("source_type");
    if let Some(url) = text("url").filter(|_| source_type.is_none_or(|s| s == "url")) {
        return Some(url.to_owned());
    }
    let data = match source_type {
        Some("base64") => text("data"),
        None => text("base64"),
        Some(_) => None,
    }?;
    let mime = text("mime_type").unwrap_or("image/png");
    Some(format!("data:{mime};base64,{data}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_standard_form_and_nothing_else() {
        let web = "https://example.com/a.png";
        assert_eq!(
            standard_image_url(&json!({"type": "image", "url": web})).as_deref(),
            Some(web)
        );
        assert_eq!(
            standard_image_url(&json!({"type": "image", "source_type": "url", "url": web}))
                .as_deref(),
            Some(web)
        );
        let data = "data:image/jpeg;base64,AAAA";
        assert_eq!(
            standard_image_url(
                &json!({"type": "image", "base64": "AAAA", "mime_type": "image/jpeg"})
            )
            .as_deref(),
            Some(data)
        );
        assert_eq!(
            standard_image_url(&json!({"type": "image", "source_type": "base64",
                "data": "AAAA", "mime_type": "image/jpeg"}))
            .as_deref(),
            Some(data)
        );
        // Anthropic's own block, a file id and other parts are not standard images.
        assert_eq!(
            standard_image_url(&json!({"type": "image", "source": {"type": "url", "url": web}})),
            None
        );
        assert_eq!(
            standard_image_url(&json!({"type": "image", "file_id": "f"})),
            None
        );
        assert_eq!(
            standard_image_url(&json!({"type": "text", "text": "x"})),
            None
        );
    }
}
