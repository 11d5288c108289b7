//! iden3's binary container, shared by `.r1cs`, `.wtns` and `.zkey`: a
//! 4-byte magic, a `u32` version, a `u32` section count, then sections of
//! `u32` type, `u64` byte length and the bytes (all little-endian).
//!
//! Files are untrusted: every length is checked against the bytes that
//! remain before it is used, so a hostile header gives an error naming the
//! file and the field, never a panic or an allocation beyond the file.

use std::path::{Path, PathBuf};

use zkpipe_core::Error;
use zkpipe_core::util::fsutil::read_at_in_pieces;

/// The largest circom/snarkjs file read: 64 GiB (a 2^24-constraint zkey is ~10 GiB).
pub const MAX_FILE_BYTES: u64 = 64 << 30;

/// Refuses a file over [`MAX_FILE_BYTES`] before any of it is read.
fn check_size(path: &Path, size: u64) -> Result<(), Error> {
    if size > MAX_FILE_BYTES {
        return Err(bad(
            &path.display().to_string(),
            format_args!("{size} bytes, over the limit of {MAX_FILE_BYTES}"),
        ));
    }
    Ok(())
}

/// The most sections [`BinFile::load_sections`] walks: snarkjs's files
/// have a dozen at most, and each costs a read.
const MAX_SECTIONS: u32 = 1024;

/// A parsed container: its kind, version and sections over the file's bytes.
#[derive(Debug)]
pub struct BinFile {
    /// What the file is, for messages (`r1cs`, `wtns`, `zkey`) and its path.
    pub name: String,
    bytes: Vec<u8>,
    /// `(type, start, len)` of each section, in file order.
    sections: Vec<(u32, usize, usize)>,
    /// The file, where sections were left on it to be read later.
    on_disk: Option<OnDisk>,
}

/// An open file and where each of its sections lies in it.
#[derive(Debug)]
struct OnDisk {
    path: PathBuf,
    file: std::fs::File,
    /// Its size when the sections were found.
    size: u64,
    /// `(type, offset, len)` of every section, in file order.
    sections: Vec<(u32, u64, usize)>,
}

/// Where a section's bytes are: in memory, or at an offset of the file
/// left open.
enum Place<'a> {
    Memory,
    Disk(&'a OnDisk, u64),
}

/// A type made of `u64` words alone, which [`BinFile::read_items`] fills
/// straight from a file's little-endian bytes.
///
/// # Safety
/// The type must be `#[repr(C)]` or `#[repr(transparent)]` over `u64`s
/// only (no padding, no other fields), with every bit pattern a value.
pub unsafe trait Words: Copy + Send + Sync {}

/// An [`Error::InvalidEncoding`] prefixed with the file's name.
pub fn bad(name: &str, msg: impl std::fmt::Display) -> Error {
    Error::InvalidEncoding(format!("{name}: {msg}"))
}

impl BinFile {
    /// Reads `path` and parses its container, expecting `magic` and a
    /// version in `versions`.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read; [`Error::InvalidEncoding`]
    /// for another kind of file, an unknown version or a truncated section.
    pub fn load(path: &Path, magic: &[u8; 4], versions: &[u32]) -> Result<BinFile, Error> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        zkpipe_core::util::fsutil::check_input(path)?;
        check_size(path, std::fs::metadata(path).map_err(io)?.len())?;
        let bytes = zkpipe_core::util::fsutil::read_capped(path, MAX_FILE_BYTES)?;
        BinFile::parse(path.display().to_string(), bytes, magic, versions)
    }

    /// Reads only the sections of `path` whose types are in `wanted` (the
    /// first of each), seeking past the others: a large zkey's header
    /// without its gigabytes of points. The others stay on disk for
    /// [`BinFile::read_items`]. Every section's header is checked against
    /// the file's size, and bytes after the last section are refused.
    ///
    /// # Errors
    /// As [`BinFile::load`] for the bytes it reads, and more than
    /// [`MAX_SECTIONS`] sections; a wanted section that is missing is an
    /// error of [`BinFile::section`] later.
    pub fn load_sections(
        path: &Path,
        magic: &[u8; 4],
        versions: &[u32],
        wanted: &[u32],
    ) -> Result<BinFile, Error> {
        use std::io::{Read, Seek, SeekFrom};
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let name = path.display().to_string();
        zkpipe_core::util::fsutil::check_input(path)?;
        let mut file = std::fs::File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        check_size(path, size)?;
        let mut head = Vec::with_capacity(12);
        (&mut file).take(12).read_to_end(&mut head).map_err(io)?;
        if head.len() < 12 {
            return BinFile::parse(name, head, magic, versions);
        }
        // Another kind of file is named as such before its sections are walked.
        BinFile::parse(
            name.clone(),
            [&head[..8], &[0; 4]].concat(),
            magic,
            versions,
        )?;
        let count = u32::from_le_bytes(head[8..12].try_into().unwrap());
        if count > MAX_SECTIONS {
            return Err(bad(
                &name,
                format_args!("{count} sections, over the {MAX_SECTIONS} this reader walks"),
            ));
        }
        let (mut out, mut taken, mut pos) = (head[..8].to_vec(), vec![], 12u64);
        out.extend(0u32.to_le_bytes());
        let mut located = Vec::new();
        for i in 0..count {
            let mut sh = [0u8; 12];
            file.read_exact(&mut sh).map_err(|_| {
                bad(
                    &name,
                    format_args!("truncated: section {i}'s header is cut short"),
                )
            })?;
            let ty = u32::from_le_bytes(sh[..4].try_into().unwrap());
            let len = u64::from_le_bytes(sh[4..].try_into().unwrap());
            pos += 12;
            if len > size - pos {
                return Err(bad(
                    &name,
                    format_args!(
                        "truncated: section {i} (type {ty}) announces {len} bytes, {} are left",
                        size - pos
                    ),
                ));
            }
            // Below the file's size, itself below MAX_FILE_BYTES.
            located.push((ty, pos, len as usize));
            if wanted.contains(&ty) && !taken.contains(&ty) {
                out.extend(sh);
                let at = out.len();
                out.reserve_exact(len as usize);
                (&mut file).take(len).read_to_end(&mut out).map_err(io)?;
                if (out.len() - at) as u64 != len {
                    return Err(bad(
                        &name,
                        format_args!("truncated: section {i} (type {ty})"),
                    ));
                }
                taken.push(ty);
            } else {
                file.seek(SeekFrom::Current(len as i64)).map_err(io)?;
            }
            pos += len;
        }
        if pos != size {
            return Err(bad(
                &name,
                format_args!("{} bytes after the last section", size - pos),
            ));
        }
        out[8..12].copy_from_slice(&(taken.len() as u32).to_le_bytes());
        let mut f = BinFile::parse(name, out, magic, versions)?;
        f.on_disk = Some(OnDisk {
            path: path.to_path_buf(),
            file,
            size,
            sections: located,
        });
        Ok(f)
    }

    /// Section `ty` whole as `count` items of `T`, read straight into
    /// their vector: from the file in pieces side by side where
    /// [`BinFile::load_sections`] left it on disk, else copied from memory.
    ///
    /// # Errors
    /// As [`BinFile::section`] for a section missing or repeated;
    /// [`Error::InvalidEncoding`] when it does not hold exactly `count`
    /// items; as [`read_at_in_pieces`] when the file changed meanwhile.
    pub fn read_items<T: Words>(&self, ty: u32, what: &str, count: usize) -> Result<Vec<T>, Error> {
        let label = format!("{} ({what} section)", self.name);
        let need = count.checked_mul(std::mem::size_of::<T>());
        let fits = |len: usize| match need {
            Some(n) if n == len => Ok(()),
            Some(n) if n < len => Err(bad(
                &label,
                format_args!("{} bytes after its content", len - n),
            )),
            _ => Err(bad(
                &label,
                format_args!("truncated: {count} items of {what} need more than its {len} bytes"),
            )),
        };
        // Where the section lies, sized against `count` before anything
        // is allocated for it.
        let (at, len) = self.locate(ty, what)?;
        fits(len)?;
        let mut items = zeroed::<T>(count);
        // SAFETY: `T` is plain `u64` words (its `Words` contract), so its
        // items' bytes are initialised and any bytes written are a value.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                items.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(items.as_slice()),
            )
        };
        self.read_located(at, ty, what, bytes)?;
        if cfg!(target_endian = "big") {
            // SAFETY: as above; `u64` words of the same bytes.
            let words = unsafe {
                std::slice::from_raw_parts_mut(items.as_mut_ptr().cast::<u64>(), bytes.len() / 8)
            };
            words.iter_mut().for_each(|w| *w = u64::from_le(*w));
        }
        Ok(items)
    }

    /// `parse` run over section `ty` where it lies: in memory, or read
    /// from the file first as [`BinFile::read_items`] reads (in pieces side
    /// by side), so a large section left on disk is not read on one thread.
    ///
    /// # Errors
    /// As [`BinFile::read_items`] for finding and reading the section;
    /// `parse`'s errors.
    pub fn read_section<R>(
        &self,
        ty: u32,
        what: &str,
        parse: impl FnOnce(Reader<'_>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let (at, len) = self.locate(ty, what)?;
        if let Place::Memory = at {
            return parse(self.section(ty, what)?);
        }
        let mut bytes = vec![0u8; len];
        self.read_located(at, ty, what, &mut bytes)?;
        parse(Reader::new(
            &bytes,
            &format!("{} ({what} section)", self.name),
        ))
    }

    /// Where section `ty` lies (in memory, or on disk at an offset) and
    /// its length.
    fn locate(&self, ty: u32, what: &str) -> Result<(Place<'_>, usize), Error> {
        if self.sections.iter().any(|s| s.0 == ty) {
            return Ok((Place::Memory, self.section(ty, what)?.left()));
        }
        let disk = self.on_disk.as_ref();
        let mut found = disk.iter().flat_map(|d| &d.sections).filter(|s| s.0 == ty);
        match (found.next(), found.next(), disk) {
            (Some(&(_, offset, len)), None, Some(d)) => Ok((Place::Disk(d, offset), len)),
            (Some(_), Some(_), _) => Err(bad(
                &self.name,
                format_args!("{what} section (type {ty}) repeated"),
            )),
            _ => Err(bad(
                &self.name,
                format_args!("no {what} section (type {ty})"),
            )),
        }
    }

    /// Fills `out` from the start of a section [`BinFile::locate`] found.
    fn read_located(
        &self,
        at: Place<'_>,
        ty: u32,
        what: &str,
        out: &mut [u8],
    ) -> Result<(), Error> {
        match at {
            Place::Memory => {
                out.copy_from_slice(self.section(ty, what)?.take(out.len(), what)?);
                Ok(())
            }
            Place::Disk(d, offset) => read_at_in_pieces(&d.path, &d.file, d.size, offset, out),
        }
    }

    /// Parses a container already in memory; `name` is used in messages.
    ///
    /// # Errors
    /// As [`BinFile::load`].
    pub fn parse(
        name: String,
        bytes: Vec<u8>,
        magic: &[u8; 4],
        versions: &[u32],
    ) -> Result<BinFile, Error> {
        let kind = String::from_utf8_lossy(magic).into_owned();
        let mut r = Reader::new(&bytes, &name);
        let got = r.take(4, "magic")?;
        if got != magic {
            return Err(bad(
                &name,
                format_args!("not a .{kind} file (it starts with {got:02x?})"),
            ));
        }
        let version = r.u32("version")?;
        if !versions.contains(&version) {
            return Err(bad(
                &name,
                format_args!(".{kind} version {version}; this reader knows {versions:?}"),
            ));
        }
        let count = r.u32("section count")?;
        let mut sections = Vec::new();
        for i in 0..count {
            let ty = r.u32(&format!("section {i} type"))?;
            let len = r.u64(&format!("section {i} length"))?;
            let len = usize::try_from(len)
                .ok()
                .filter(|&l| l <= r.left())
                .ok_or_else(|| {
                    bad(
                        &name,
                        format_args!(
                            "truncated: section {i} (type {ty}) announces {len} bytes, {} are left",
                            r.left()
                        ),
                    )
                })?;
            sections.push((ty, r.pos, len));
            r.pos += len;
        }
        if r.left() != 0 {
            return Err(bad(
                &name,
                format_args!("{} bytes after the last section", r.left()),
            ));
        }
        Ok(BinFile {
            name,
            bytes,
            sections,
            on_disk: None,
        })
    }

    /// The one section of type `ty`.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] when it is missing or repeated.
    pub fn section(&self, ty: u32, what: &str) -> Result<Reader<'_>, Error> {
        let mut found = self.sections.iter().filter(|s| s.0 == ty);
        match (found.next(), found.next()) {
            (Some(&(_, start, len)), None) => Ok(Reader {
                b: &self.bytes[start..start + len],
                pos: 0,
                name: format!("{} ({what} section)", self.name),
            }),
            (None, _) => Err(bad(
                &self.name,
                format_args!("no {what} section (type {ty})"),
            )),
            (Some(_), Some(_)) => Err(bad(
                &self.name,
                format_args!("{what} section (type {ty}) repeated"),
            )),
        }
    }

    /// Whether a section of type `ty` is present and not empty.
    pub fn has(&self, ty: u32) -> bool {
        self.sections.iter().any(|s| s.0 == ty && s.2 > 0)
    }
}

/// `n` items of `T` with every word zero, from the allocator's zeroed
/// memory (fresh pages are not written here: the readers touch them first).
fn zeroed<T: Words>(n: usize) -> Vec<T> {
    let layout = std::alloc::Layout::array::<T>(n).expect("a count sized against a file");
    if layout.size() == 0 {
        return Vec::new();
    }
    // SAFETY: a non-zero layout; all-zero words are a `T` (its `Words`
    // contract); the vector owns the allocation with that layout.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<T>();
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Vec::from_raw_parts(p, n, n)
    }
}

/// A cursor over one section that names the file and field when it runs out.
#[derive(Debug)]
pub struct Reader<'a> {
    b: &'a [u8],
    /// Offset of the next byte.
    pub pos: usize,
    name: String,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8], name: &str) -> Reader<'a> {
        Reader {
            b,
            pos: 0,
            name: name.to_string(),
        }
    }

    /// The name for messages: file and section.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes not yet read.
    pub fn left(&self) -> usize {
        self.b.len() - self.pos
    }

    /// The next `n` bytes.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] ("truncated") when fewer are left.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Error> {
        if self.left() < n {
            return Err(bad(
                &self.name,
                format_args!(
                    "truncated: {what} needs {n} bytes at offset {}, {} are left",
                    self.pos,
                    self.left()
                ),
            ));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// `count` items of `size` bytes each, checked against what is left
    /// before anything is allocated for them.
    ///
    /// # Errors
    /// As [`Reader::take`].
    pub fn items(&mut self, count: u64, size: usize, what: &str) -> Result<&'a [u8], Error> {
        let n = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(size))
            .ok_or_else(|| bad(&self.name, format_args!("{what}: {count} items overflow")))?;
        self.take(n, what)
    }

    /// A little-endian `u32`.
    ///
    /// # Errors
    /// As [`Reader::take`].
    pub fn u32(&mut self, what: &str) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }

    /// A little-endian `u64`.
    ///
    /// # Errors
    /// As [`Reader::take`].
    pub fn u64(&mut self, what: &str) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }

    /// Refuses bytes left over after the section's content.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] saying how many.
    pub fn finish(&self) -> Result<(), Error> {
        match self.left() {
            0 => Ok(()),
            n => Err(bad(&self.name, format_args!("{n} bytes after its content"))),
        }
    }

    /// An error about this section.
    pub fn error(&self, msg: impl std::fmt::Display) -> Error {
        bad(&self.name, msg)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A container of `sections` with `magic` and `version`.
    pub fn container(magic: &[u8; 4], version: u32, sections: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut out = magic.to_vec();
        out.extend(version.to_le_bytes());
        out.extend((sections.len() as u32).to_le_bytes());
        for (ty, data) in sections {
            out.extend(ty.to_le_bytes());
            out.extend((data.len() as u64).to_le_bytes());
            out.extend(data);
        }
        out
    }

    #[test]
    fn every_prefix_of_a_container_is_refused_without_panic() {
        let bytes = container(b"wtns", 2, &[(1, vec![1; 10]), (2, vec![2; 7])]);
        assert!(BinFile::parse("t".into(), bytes.clone(), b"wtns", &[2]).is_ok());
        for cut in 0..bytes.len() {
            let r = BinFile::parse("t".into(), bytes[..cut].to_vec(), b"wtns", &[2]);
            assert!(r.is_err(), "prefix of {cut} bytes accepted");
        }
    }

    #[test]
    fn load_sections_reads_the_wanted_ones_and_refuses_every_cut() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.zkey");
        let bytes = container(
            b"zkey",
            1,
            &[(1, vec![1; 4]), (3, vec![3; 1000]), (2, vec![2; 9])],
        );
        std::fs::write(&p, &bytes).unwrap();
        let f = BinFile::load_sections(&p, b"zkey", &[1], &[1, 2]).unwrap();
        assert_eq!(f.section(2, "two").unwrap().take(9, "x").unwrap(), &[2; 9]);
        assert!(f.section(3, "three").is_err());
        assert_eq!(f.bytes.len(), 12 + 12 + 4 + 12 + 9);
        for cut in 0..bytes.len() {
            std::fs::write(&p, &bytes[..cut]).unwrap();
            let r = BinFile::load_sections(&p, b"zkey", &[1], &[1, 2]);
            assert!(r.is_err(), "prefix of {cut} bytes accepted");
        }
        std::fs::write(&p, b"wtns\x02\0\0\0\0\0\0\0").unwrap();
        assert!(BinFile::load_sections(&p, b"zkey", &[1], &[2]).is_err());
        // Another kind of file is named by its magic, whatever its
        // section count; a zkey announcing more sections than any has is refused.
        std::fs::write(&p, b"wtns\x02\0\0\0\xff\xff\xff\xff").unwrap();
        let e = BinFile::load_sections(&p, b"zkey", &[1], &[2]).unwrap_err();
        assert!(e.to_string().contains("not a .zkey file"), "{e}");
        std::fs::write(&p, b"zkey\x01\0\0\0\xff\xff\xff\xff").unwrap();
        let e = BinFile::load_sections(&p, b"zkey", &[1], &[2]).unwrap_err();
        assert!(
            e.to_string().contains("4294967295 sections, over the 1024"),
            "{e}"
        );
        // Bytes after the last section.
        let mut longer = bytes.clone();
        longer.extend([9; 3]);
        std::fs::write(&p, &longer).unwrap();
        let e = BinFile::load_sections(&p, b"zkey", &[1], &[1, 2]).unwrap_err();
        assert!(
            e.to_string().contains("3 bytes after the last section"),
            "{e}"
        );
    }

    /// A section read from disk parses as the same section in memory;
    /// a missing or repeated one is named.
    #[test]
    fn read_section_from_disk_or_memory_gives_the_same_bytes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.zkey");
        let big: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
        let bytes = container(
            b"zkey",
            1,
            &[
                (1, vec![1; 4]),
                (4, big.clone()),
                (5, vec![5; 8]),
                (5, vec![6; 8]),
            ],
        );
        std::fs::write(&p, &bytes).unwrap();
        let whole = |mut r: Reader<'_>| Ok(r.take(r.left(), "all")?.to_vec());
        let on_disk = BinFile::load_sections(&p, b"zkey", &[1], &[1]).unwrap();
        let in_memory = BinFile::load(&p, b"zkey", &[1]).unwrap();
        for f in [&on_disk, &in_memory] {
            assert_eq!(f.read_section(4, "coefficients", whole).unwrap(), big);
            let e = f.read_section(9, "H", whole).unwrap_err();
            assert!(e.to_string().contains("no H section (type 9)"), "{e}");
        }
        let e = on_disk.read_section(5, "A", whole).unwrap_err();
        assert!(e.to_string().contains("A section (type 5) repeated"), "{e}");
        // The parser's errors name the section.
        let e = on_disk
            .read_section(4, "coefficients", |mut r| {
                r.take(4 << 20, "coefficient").map(|_| ())
            })
            .unwrap_err();
        assert!(
            e.to_string().contains("(coefficients section): truncated"),
            "{e}"
        );
    }

    #[test]
    fn a_file_over_the_limit_is_refused_before_it_is_read() {
        // A sparse file: its size, not its blocks, is what is judged.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("huge.zkey");
        let mut bytes = container(b"zkey", 1, &[(2, vec![2; 9])]);
        bytes[16..24].copy_from_slice(&(MAX_FILE_BYTES + 1).to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(MAX_FILE_BYTES + 64)
            .unwrap();
        for r in [
            BinFile::load_sections(&p, b"zkey", &[1], &[2]),
            BinFile::load(&p, b"zkey", &[1]),
        ] {
            let e = r.unwrap_err().to_string();
            assert!(e.contains("over the limit"), "{e}");
        }
    }

    #[test]
    fn hostile_lengths_and_wrong_magic_are_errors() {
        let mut bytes = container(b"zkey", 1, &[(1, vec![0; 4])]);
        bytes[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        let e = BinFile::parse("t".into(), bytes, b"zkey", &[1]).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        let bytes = container(b"r1cs", 1, &[]);
        let e = BinFile::parse("t".into(), bytes, b"zkey", &[1]).unwrap_err();
        assert!(e.to_string().contains("not a .zkey file"), "{e}");
        let mut r = Reader::new(&[0; 8], "t");
        assert!(r.items(u64::MAX, 96, "points").is_err());
        assert!(r.items(1 << 40, 96, "points").is_err());
    }
}
