//! Where a counterfeit card puts a request: it reports more than its flash holds, and an
//! address past the real size either wraps to the start (the controller ignores the high
//! address bits) or goes nowhere (writes are accepted and lost, reads return zeros).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeMode {
    Wrap,
    Drop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FakeCapacity {
    pub real_bytes: u64,
    pub mode: FakeMode,
}

/// One piece of a request: `len` bytes at `request_offset` into the request's buffer, which
/// land at `media_offset` of the real flash, or nowhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub request_offset: usize,
    pub len: usize,
    pub media_offset: Option<u64>,
}

/// The pieces of a request of `len` bytes at `offset`, in request order.
pub fn pieces(fake: Option<FakeCapacity>, offset: u64, len: usize) -> Vec<Piece> {
    let Some(fake) = fake.filter(|f| f.real_bytes > 0) else {
        return vec![Piece {
            request_offset: 0,
            len,
            media_offset: Some(offset),
        }];
    };
    let real = fake.real_bytes;
    let mut out = Vec::new();
    let mut done = 0usize;
    while done < len {
        let at = offset + done as u64;
        let (media, room) = match fake.mode {
            FakeMode::Wrap => (Some(at % real), real - at % real),
            FakeMode::Drop if at < real => (Some(at), real - at),
            FakeMode::Drop => (None, u64::MAX),
        };
        let n = usize::try_from(room).unwrap_or(usize::MAX).min(len - done);
        out.push(Piece {
            request_offset: done,
            len: n,
            media_offset: media,
        });
        done += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_card_maps_every_byte_to_itself() {
        assert_eq!(
            pieces(None, 4096, 512),
            [Piece {
                request_offset: 0,
                len: 512,
                media_offset: Some(4096)
            }]
        );
    }

    #[test]
    fn a_wrapping_card_splits_a_request_at_its_real_end() {
        let fake = FakeCapacity {
            real_bytes: 1000,
            mode: FakeMode::Wrap,
        };
        assert_eq!(
            pieces(Some(fake), 900, 300),
            [
                Piece {
                    request_offset: 0,
                    len: 100,
                    media_offset: Some(900)
                },
                Piece {
                    request_offset: 100,
                    len: 200,
                    media_offset: Some(0)
                }
            ]
        );
        assert_eq!(pieces(Some(fake), 2500, 10)[0].media_offset, Some(500));
    }

    #[test]
    fn a_dropping_card_loses_what_lies_past_its_real_end() {
        let fake = FakeCapacity {
            real_bytes: 1000,
            mode: FakeMode::Drop,
        };
        let p = pieces(Some(fake), 950, 100);
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].len, p[0].media_offset), (50, Some(950)));
        assert_eq!((p[1].len, p[1].media_offset), (50, None));
    }
}
