//! An event's `format` file as tracefs writes it: its name, ID, each field's offset, size
//! and signedness, and the print fmt.
//!
//! Written here rather than taken from a crate: the one crate that parses these files,
//! tracepoint_decode 0.5, does not build for the 32-bit ARM boards (it hands `gmtime_r` an
//! i64 where their libc's `time_t` is 32 bits), and the board binaries must read the kernel's
//! events as the host's do. The grammar is the kernel's `trace_event_raw_*` description
//! (kernel/trace/trace_events.c, `f_show`): one `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;`
//! line per field.

/// How a field's bytes are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// An integer of 1, 2, 4 or 8 bytes.
    Number,
    /// A fixed array of bytes (`char comm[16]`): text up to its first NUL.
    Chars,
    /// `__data_loc`: a 32-bit word at the field, the data's offset in the record (low 16
    /// bits) and its length (high 16 bits).
    DataLoc,
    /// `__rel_loc`: as `__data_loc`, the offset counted from the end of the word.
    RelLoc,
    /// Anything else (an array of numbers, a struct): not read.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldFormat {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    pub kind: FieldKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub name: String,
    pub id: u32,
    pub fields: Vec<FieldFormat>,
    pub print_fmt: String,
}

/// A file this parser refuses: it names what it lacked.
pub fn parse(text: &str) -> Result<EventFormat, String> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    let mut print_fmt = String::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("ID:") {
            id = Some(
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("not an event ID: {:.40}", v.trim()))?,
            );
        } else if let Some(v) = line.strip_prefix("print fmt:") {
            print_fmt = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("field:") {
            fields.push(parse_field(v)?);
        }
    }
    Ok(EventFormat {
        name: name.ok_or("not a format file (no name)")?,
        id: id.ok_or("not a format file (no ID)")?,
        fields,
        print_fmt,
    })
}

/// One `TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;` (the text after `field:`). Kernels before
/// 2.6.31 wrote no `signed:`; such a field reads as unsigned.
fn parse_field(line: &str) -> Result<FieldFormat, String> {
    let mut parts = line.split(';');
    let decl = parts.next().unwrap_or_default().trim();
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in parts {
        let Some((key, value)) = part.trim().split_once(':') else {
            continue;
        };
        let number = || {
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("field {decl:.60}: {key} is not a number"))
        };
        match key.trim() {
            "offset" => offset = Some(number()?),
            "size" => size = Some(number()?),
            "signed" => signed = number()? != 0,
            _ => {}
        }
    }
    let (Some(offset), Some(size)) = (offset, size) else {
        return Err(format!("field {decl:.60} has no offset or size"));
    };
    let last = decl
        .split_whitespace()
        .last()
        .ok_or("a field without a name")?;
    // `char bdi[32]`: the name before its brackets, the element count inside them.
    let (field_name, count) = match last.split_once('[') {
        Some((n, rest)) => (n, Some(rest.trim_end_matches(']').parse::<usize>().ok())),
        None => (last, None),
    };
    let kind = if decl.starts_with("__data_loc") {
        FieldKind::DataLoc
    } else if decl.starts_with("__rel_loc") {
        FieldKind::RelLoc
    } else {
        match count {
            // An array of single bytes is text; a count the kernel printed as a macro
            // name (unexpanded) is judged by the type.
            Some(Some(n)) if n > 0 && size / n == 1 => FieldKind::Chars,
            Some(None) if decl.contains("char") => FieldKind::Chars,
            Some(_) => FieldKind::Other,
            None if matches!(size, 1 | 2 | 4 | 8) => FieldKind::Number,
            None => FieldKind::Other,
        }
    };
    Ok(FieldFormat {
        name: field_name.to_string(),
        offset,
        size,
        signed,
        kind,
    })
}

impl FieldFormat {
    /// The field's bytes in one record: for a `__data_loc` or `__rel_loc`, the data it
    /// points at. None when the record is too short for what its format says.
    pub fn bytes<'a>(&self, record: &'a [u8], big_endian: bool) -> Option<&'a [u8]> {
        let own = record.get(self.offset..self.offset.checked_add(self.size)?)?;
        match self.kind {
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let word: [u8; 4] = own.get(..4)?.try_into().ok()?;
                let word = if big_endian {
                    u32::from_be_bytes(word)
                } else {
                    u32::from_le_bytes(word)
                };
                let mut at = (word & 0xffff) as usize;
                if self.kind == FieldKind::RelLoc {
                    at = at.checked_add(self.offset + self.size)?;
                }
                let len = (word >> 16) as usize;
                record.get(at..at.checked_add(len)?)
            }
            _ => Some(own),
        }
    }

    /// A number field, sign-extended as its format says; None for a field of another kind.
    pub fn int(&self, record: &[u8], big_endian: bool) -> Option<i64> {
        if self.kind != FieldKind::Number {
            return None;
        }
        let bytes = self.bytes(record, big_endian)?;
        let mut raw = [0u8; 8];
        let value = if big_endian {
            raw[8 - bytes.len()..].copy_from_slice(bytes);
            u64::from_be_bytes(raw)
        } else {
            raw[..bytes.len()].copy_from_slice(bytes);
            u64::from_le_bytes(raw)
        };
        let bits = bytes.len() as u32 * 8;
        Some(if self.signed && bits < 64 {
            ((value << (64 - bits)) as i64) >> (64 - bits)
        } else {
            value as i64
        })
    }

    /// A text field (a char array or a `__data_loc` string) up to its first NUL; None for
    /// a number.
    pub fn text(&self, record: &[u8], big_endian: bool) -> Option<String> {
        if matches!(self.kind, FieldKind::Number | FieldKind::Other) {
            return None;
        }
        let bytes = self.bytes(record, big_endian)?;
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THROTTLE_4_4: &str = "name: balance_dirty_pages
ID: 512
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char bdi[32];\toffset:8;\tsize:32;\tsigned:0;
\tfield:unsigned long limit;\toffset:40;\tsize:4;\tsigned:0;
\tfield:long pause;\toffset:44;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:48;\tsize:4;\tsigned:1;
\tfield:__rel_loc char[] rel;\toffset:52;\tsize:4;\tsigned:1;
\tfield:unsigned long flags[2];\toffset:56;\tsize:8;\tsigned:0;
\tfield:char rwbs[RWBS_LEN];\toffset:64;\tsize:8;\tsigned:1;

print fmt: \"bdi %s\", REC->bdi
";

    #[test]
    fn fields_of_a_32_bit_kernel_are_read_by_their_own_sizes() {
        let f = parse(THROTTLE_4_4).expect("parses");
        assert_eq!((f.name.as_str(), f.id), ("balance_dirty_pages", 512));
        let kinds: Vec<(&str, FieldKind)> =
            f.fields.iter().map(|f| (f.name.as_str(), f.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("common_type", FieldKind::Number),
                ("common_pid", FieldKind::Number),
                ("bdi", FieldKind::Chars),
                ("limit", FieldKind::Number),
                ("pause", FieldKind::Number),
                ("name", FieldKind::DataLoc),
                ("rel", FieldKind::RelLoc),
                ("flags", FieldKind::Other),
                ("rwbs", FieldKind::Chars),
            ]
        );
        let mut record = vec![0u8; 72];
        record[8..11].copy_from_slice(b"7:0");
        record[40..44].copy_from_slice(&4000u32.to_le_bytes());
        record[44..48].copy_from_slice(&(-3i32).to_le_bytes());
        // __data_loc: "cam" at 68, 4 bytes with its NUL.
        record[48..52].copy_from_slice(&((4u32 << 16) | 68).to_le_bytes());
        // __rel_loc: counted from the end of its word (56): 12 further on is 68 again.
        record[52..56].copy_from_slice(&((4u32 << 16) | 12).to_le_bytes());
        record[64..66].copy_from_slice(b"WS");
        record[68..71].copy_from_slice(b"cam");
        let field = |n: &str| f.fields.iter().find(|f| f.name == n).expect("field");
        assert_eq!(field("bdi").text(&record, false).as_deref(), Some("7:0"));
        assert_eq!(field("limit").int(&record, false), Some(4000));
        assert_eq!(field("pause").int(&record, false), Some(-3));
        assert_eq!(field("name").text(&record, false).as_deref(), Some("cam"));
        assert_eq!(field("rel").text(&record, false).as_deref(), Some("cam"));
        assert_eq!(field("rwbs").text(&record, false).as_deref(), Some("WS"));
        assert_eq!(field("flags").int(&record, false), None);
        assert_eq!(field("bdi").int(&record, false), None);
        // A record shorter than its format: nothing read, no panic.
        assert_eq!(field("name").text(&record[..50], false), None);
        assert_eq!(field("limit").int(&record[..42], false), None);
    }

    #[test]
    fn big_endian_numbers_and_bad_files() {
        let f = parse(THROTTLE_4_4).expect("parses");
        let pause = f.fields.iter().find(|f| f.name == "pause").expect("pause");
        let mut record = vec![0u8; 72];
        record[44..48].copy_from_slice(&(-300i32).to_be_bytes());
        assert_eq!(pause.int(&record, true), Some(-300));
        assert!(parse("ID: 3\n").unwrap_err().contains("no name"));
        assert!(parse("name: x\nID: many\n")
            .unwrap_err()
            .contains("not an event ID"));
        assert!(
            parse("name: x\nID: 1\n\tfield:int a;\toffset:z;\tsize:4;\n")
                .unwrap_err()
                .contains("offset is not a number")
        );
        assert!(parse("name: x\nID: 1\n\tfield:int a;\tsize:4;\n")
            .unwrap_err()
            .contains("no offset"));
        // Huge offsets are refused when read, never added past the address space.
        let huge = parse(&format!(
            "name: x\nID: 1\n\tfield:int a;\toffset:{};\tsize:4;\tsigned:1;\n",
            usize::MAX
        ))
        .expect("parses");
        assert_eq!(huge.fields[0].int(&[0; 16], false), None);
    }
}
