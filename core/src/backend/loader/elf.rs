//! Checks a would-be plugin file before the dynamic loader sees it.
//!
//! `dlopen` maps a library's segments straight from the file; a truncated or
//! half-copied library whose segments reach past the end of the file makes
//! the first touch of those pages raise SIGBUS, which kills the whole host.
//! So before handing a path to `dlopen` we read the ELF headers ourselves
//! (plain `std` reads, nothing mapped) and refuse anything that is not a
//! complete shared object for this machine.
//!
//! What is checked: the path is a regular file (a FIFO would block `open`,
//! a directory or dangling link cannot be a library), its size is non-zero
//! and below [`MAX_LIBRARY_BYTES`], the ELF identification matches this
//! host (64-bit, byte order, machine), the type is `ET_DYN`, and the program
//! header table, every segment's file bytes and the section header table
//! all lie inside the file.
//!
//! The check guards against accidents (an interrupted copy, a stray pipe),
//! not against someone racing the loader: whoever can write to a plugin
//! folder can run code in this process anyway.

use std::fs::{File, FileType};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Largest library file accepted (2 GiB). Debug builds of our plugins are
/// tens of MiB; a file of gigabytes named like a plugin is a mistake (a disk
/// image, a core dump), not something to map into the host.
pub const MAX_LIBRARY_BYTES: u64 = 2 << 30;

/// Size of the ELF64 file header.
const EHDR_SIZE: usize = 64;
/// Size of one ELF64 program header; `ld.so` refuses any other `e_phentsize`.
const PHDR_SIZE: usize = 56;
/// Size of one ELF64 section header.
const SHDR_SIZE: u64 = 64;

const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const ELFDATA2MSB: u8 = 2;
const EV_CURRENT: u8 = 1;
const ET_DYN: u16 = 3;
/// `e_shnum` value meaning "the count is in section 0's `sh_size`".
const SHN_UNDEF: u16 = 0;

/// The `e_machine` of the host, where we know it.
const HOST_MACHINE: Option<(u16, &str)> = if cfg!(target_arch = "x86_64") {
    Some((62, "x86-64"))
} else if cfg!(target_arch = "aarch64") {
    Some((183, "AArch64"))
} else if cfg!(target_arch = "riscv64") {
    Some((243, "RISC-V"))
} else {
    None
};

const HOST_DATA: u8 = if cfg!(target_endian = "little") {
    ELFDATA2LSB
} else {
    ELFDATA2MSB
};

/// Checks that `path` names a complete ELF shared object for this machine,
/// without following it into `dlopen`.
///
/// # Errors
/// A one-line reason: not a regular file (directory, FIFO, dangling link,
/// …), unreadable, empty, too large, not ELF, built for another machine or
/// class, not a shared object, or truncated (naming the structure that runs
/// past the end and both byte counts).
pub fn check_shared_object(path: &Path) -> Result<(), String> {
    // Look at the file type before opening: opening a FIFO for reading
    // blocks until a writer appears, which would hang the loader.
    let link_meta =
        std::fs::symlink_metadata(path).map_err(|e| format!("cannot inspect file: {e}"))?;
    let meta = if link_meta.file_type().is_symlink() {
        match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let target = std::fs::read_link(path)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".into());
                return Err(format!(
                    "dangling symbolic link: points to {target}, which does not exist"
                ));
            }
            Err(e) => return Err(format!("cannot follow symbolic link: {e}")),
        }
    } else {
        link_meta
    };
    if !meta.file_type().is_file() {
        return Err(format!(
            "{}, not a library file",
            describe_file_type(meta.file_type())
        ));
    }

    let mut file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    // The file we opened may not be the one we looked at a moment ago; the
    // type and size that count are those of the open file.
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot inspect file: {e}"))?;
    if !meta.file_type().is_file() {
        return Err(format!(
            "{}, not a library file",
            describe_file_type(meta.file_type())
        ));
    }
    check_elf(&mut file, meta.len())
}

/// What a non-regular file is, for a reason string.
fn describe_file_type(t: FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// The ELF checks proper, on any seekable reader of `len` bytes.
fn check_elf<R: Read + Seek>(file: &mut R, len: u64) -> Result<(), String> {
    if len == 0 {
        return Err("empty file (0 bytes): not a library".into());
    }
    if len > MAX_LIBRARY_BYTES {
        return Err(format!(
            "file is {len} bytes, larger than the {MAX_LIBRARY_BYTES}-byte limit for a plugin library"
        ));
    }

    let mut ident = [0u8; 16];
    let ident_len = read_at_most(file, 0, &mut ident)?;
    if ident_len < 4 || ident[..4] != *b"\x7fELF" {
        return Err("not an ELF file (no ELF magic number at the start)".into());
    }
    if ident_len < ident.len() || len < EHDR_SIZE as u64 {
        return Err(truncated("ELF header", EHDR_SIZE as u64, len));
    }
    if ident[4] != ELFCLASS64 {
        return Err(format!(
            "ELF class {} ({}), this host loads 64-bit libraries only",
            ident[4],
            if ident[4] == 1 { "32-bit" } else { "unknown" }
        ));
    }
    if ident[5] != HOST_DATA {
        return Err(format!(
            "ELF byte order {} ({}), this host is {}",
            ident[5],
            match ident[5] {
                ELFDATA2LSB => "little-endian",
                ELFDATA2MSB => "big-endian",
                _ => "unknown",
            },
            if HOST_DATA == ELFDATA2LSB {
                "little-endian"
            } else {
                "big-endian"
            }
        ));
    }
    if ident[6] != EV_CURRENT {
        return Err(format!("unknown ELF version {}", ident[6]));
    }

    let mut ehdr = [0u8; EHDR_SIZE];
    read_exactly(file, 0, &mut ehdr)?;
    let e_type = u16_at(&ehdr, 16);
    let e_machine = u16_at(&ehdr, 18);
    let e_phoff = u64_at(&ehdr, 32);
    let e_shoff = u64_at(&ehdr, 40);
    let e_phentsize = u16_at(&ehdr, 54);
    let e_phnum = u16_at(&ehdr, 56);
    let e_shentsize = u16_at(&ehdr, 58);
    let e_shnum = u16_at(&ehdr, 60);

    if e_type != ET_DYN {
        return Err(format!(
            "ELF type {e_type} ({}), not a shared object",
            match e_type {
                1 => "relocatable object",
                2 => "executable",
                4 => "core dump",
                _ => "unknown",
            }
        ));
    }
    if let Some((host_machine, host_name)) = HOST_MACHINE
        && e_machine != host_machine
    {
        return Err(format!(
            "built for ELF machine {e_machine}, this host is {host_name} (machine {host_machine})"
        ));
    }

    // Program headers: the dynamic loader maps every segment's file bytes.
    if e_phnum > 0 && usize::from(e_phentsize) != PHDR_SIZE {
        return Err(format!(
            "bad ELF program header size {e_phentsize} (expected {PHDR_SIZE})"
        ));
    }
    let phdrs_end = table_end(e_phoff, e_phnum.into(), PHDR_SIZE as u64)
        .ok_or("corrupt ELF: program header table offset overflows")?;
    if phdrs_end > len {
        return Err(truncated("program header table", phdrs_end, len));
    }
    let mut phdrs = vec![0u8; usize::from(e_phnum) * PHDR_SIZE];
    read_exactly(file, e_phoff, &mut phdrs)?;
    for (index, phdr) in phdrs.chunks_exact(PHDR_SIZE).enumerate() {
        let p_type = u32_at(phdr, 0);
        let p_offset = u64_at(phdr, 8);
        let p_filesz = u64_at(phdr, 32);
        let end = p_offset.checked_add(p_filesz).ok_or_else(|| {
            format!(
                "corrupt ELF: segment {index} ({}) offset overflows",
                segment_name(p_type)
            )
        })?;
        if end > len {
            return Err(truncated(
                &format!("segment {index} ({})", segment_name(p_type)),
                end,
                len,
            ));
        }
    }

    // Section headers: not mapped by ld.so, but they sit at the end of the
    // file, so a table cut short is the surest sign of a half-copied file.
    if e_shoff != 0 {
        let section_count = if e_shnum == SHN_UNDEF {
            // More than 0xff00 sections: the count is section 0's sh_size.
            if u64::from(e_shentsize) < SHDR_SIZE {
                return Err(format!(
                    "bad ELF section header size {e_shentsize} (expected {SHDR_SIZE})"
                ));
            }
            let first_end = e_shoff
                .checked_add(SHDR_SIZE)
                .ok_or("corrupt ELF: section table offset overflows")?;
            if first_end > len {
                return Err(truncated("section table", first_end, len));
            }
            let mut shdr0 = [0u8; SHDR_SIZE as usize];
            read_exactly(file, e_shoff, &mut shdr0)?;
            u64_at(&shdr0, 32)
        } else {
            e_shnum.into()
        };
        let shdrs_end = table_end(e_shoff, section_count, e_shentsize.into())
            .ok_or("corrupt ELF: section table size overflows")?;
        if shdrs_end > len {
            return Err(truncated("section table", shdrs_end, len));
        }
    }
    Ok(())
}

fn truncated(what: &str, end: u64, len: u64) -> String {
    format!("truncated ELF: {what} ends at byte {end}, file is {len} bytes (incomplete copy?)")
}

fn segment_name(p_type: u32) -> &'static str {
    match p_type {
        1 => "LOAD",
        2 => "DYNAMIC",
        3 => "INTERP",
        4 => "NOTE",
        6 => "PHDR",
        7 => "TLS",
        0x6474_e550 => "GNU_EH_FRAME",
        0x6474_e551 => "GNU_STACK",
        0x6474_e552 => "GNU_RELRO",
        0x6474_e553 => "GNU_PROPERTY",
        _ => "other",
    }
}

/// `offset + count * entry_size`, or `None` on overflow.
fn table_end(offset: u64, count: u64, entry_size: u64) -> Option<u64> {
    offset.checked_add(count.checked_mul(entry_size)?)
}

/// Reads `buf.len()` bytes at `offset`; the caller has checked they exist,
/// so a short read means the file changed under us.
fn read_exactly<R: Read + Seek>(file: &mut R, offset: u64, buf: &mut [u8]) -> Result<(), String> {
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_exact(buf))
        .map_err(|e| format!("cannot read ELF headers: {e}"))
}

/// Reads up to `buf.len()` bytes at `offset`, returning how many there were.
fn read_at_most<R: Read + Seek>(
    file: &mut R,
    offset: u64,
    buf: &mut [u8],
) -> Result<usize, String> {
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| format!("cannot read ELF headers: {e}"))?;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot read ELF headers: {e}")),
        }
    }
    Ok(filled)
}

// Field readers in the host's byte order (checked to be the file's above).
fn u16_at(b: &[u8], at: usize) -> u16 {
    let bytes = [b[at], b[at + 1]];
    if HOST_DATA == ELFDATA2LSB {
        u16::from_le_bytes(bytes)
    } else {
        u16::from_be_bytes(bytes)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut bytes = [0u8; 4];
    bytes.copy_from_slice(&b[at..at + 4]);
    if HOST_DATA == ELFDATA2LSB {
        u32::from_le_bytes(bytes)
    } else {
        u32::from_be_bytes(bytes)
    }
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&b[at..at + 8]);
    if HOST_DATA == ELFDATA2LSB {
        u64::from_le_bytes(bytes)
    } else {
        u64::from_be_bytes(bytes)
    }
}
