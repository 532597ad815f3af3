//! The small XML that NCCL reads and writes (`src/graph/xml.cc`): tags with
//! quoted attributes, no text content, `<?…?>` and `<!--…-->` skipped. One
//! tokenizer for NCCL's topology dumps (`NCCL_TOPO_DUMP_FILE`, read by
//! `contend topo import`) and graph files (`NCCL_GRAPH_FILE`, read by
//! `contend-nccl`); each tag keeps the byte offset it starts at, so an error
//! can name the line.

/// One tag: `<name a="v" …>`, `</name>` or `<name …/>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tag {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub closing: bool,
    pub self_closing: bool,
    /// Byte offset of the `<` in the text.
    pub offset: usize,
}

impl Tag {
    /// The value of attribute `k`.
    pub fn get(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

/// A tokenizing error and the byte offset it is at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XmlError {
    pub offset: usize,
    pub message: String,
}

/// The tags of `text`, in order.
pub fn tags(text: &str) -> Result<Vec<Tag>, XmlError> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(rel) = text[at..].find('<') {
        let start = at + rel;
        if text[start..].starts_with("<!--") {
            let end = text[start..].find("-->").ok_or(XmlError {
                offset: start,
                message: "unterminated comment".into(),
            })?;
            at = start + end + 3;
            continue;
        }
        let end = text[start..].find('>').ok_or(XmlError {
            offset: start,
            message: "unterminated tag (the text ends inside it)".into(),
        })? + start;
        let inner = text[start + 1..end].trim();
        at = end + 1;
        if inner.starts_with('?') || inner.starts_with('!') {
            continue;
        }
        let err = |message: String| XmlError {
            offset: start,
            message,
        };
        let closing = inner.starts_with('/');
        let self_closing = inner.ends_with('/');
        let body = inner.trim_start_matches('/').trim_end_matches('/').trim();
        let (name, mut a) = match body.find(char::is_whitespace) {
            Some(i) => (&body[..i], &body[i..]),
            None => (body, ""),
        };
        if name.is_empty() {
            return Err(err("a tag without a name".into()));
        }
        let mut attrs = Vec::new();
        loop {
            a = a.trim_start();
            if a.is_empty() {
                break;
            }
            let eq = a
                .find('=')
                .ok_or_else(|| err(format!("attribute without value in <{name}>")))?;
            let key = a[..eq].trim().to_string();
            let v = a[eq + 1..].trim_start();
            let q = v
                .chars()
                .next()
                .ok_or_else(|| err(format!("`{key}` has no value in <{name}>")))?;
            if q != '"' && q != '\'' {
                return Err(err(format!("unquoted value of `{key}` in <{name}>")));
            }
            let close = v[1..]
                .find(q)
                .ok_or_else(|| err(format!("unterminated value of `{key}` in <{name}>")))?;
            attrs.push((key, v[1..1 + close].to_string()));
            a = &v[close + 2..];
        }
        out.push(Tag {
            name: name.to_string(),
            attrs,
            closing,
            self_closing,
            offset: start,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_keep_their_offsets_and_attributes() {
        let t = tags("<?xml version=\"1.0\"?>\n<!-- a <b> -->\n<a x=\"1\" y='2'><b/></a>").unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!((t[0].name.as_str(), t[0].get("y")), ("a", Some("2")));
        assert!(t[1].self_closing && t[2].closing);
        assert_eq!(t[0].offset, 37);
        let e = tags("<a x=\"1\">\n<b y=\"2").unwrap_err();
        assert_eq!(e.offset, 10);
        assert!(tags("<a x=1>").is_err());
    }
}
