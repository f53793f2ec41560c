//! The arm's controller inside emulated Cortex-M firmware (`hil run --controller-in firmware`):
//! QEMU runs the `firmware/` image on an `mps2-an386` (Cortex-M4F; `HIL_QEMU_MACHINE=mps2-an385`
//! for the Cortex-M3), whose RAM is a file this process maps too; states go in and servo outputs come back through the mailbox of
//! [`control_core::mailbox`] in compact frames ([`control_core::compact`]).
//!
//! [`FirmwareArm`] is a [`LoopController`] like the host's [`ArmController`]: the session drives
//! it the same way and records what the firmware answered. It also ticks the host's controller on
//! the same states and compares the two outputs bit for bit ([`FirmwareReport`]). QEMU dying,
//! hanging, the firmware faulting or answering wrongly makes the controller lost: the session
//! cuts the run as for a lost plant, and the safe state's torque then comes from the host's
//! controller.
//!
//! QEMU runs with `-icount shift=6`: one instruction is 64 ns of virtual time, so the board's
//! 25 MHz timer counts 0.625 per instruction and the firmware's count of each phase converts
//! exactly (to a count's rounding) to instructions. QEMU is not cycle-accurate: these are
//! instructions, not cycles.
//!
//! The exchange blocks the caller until the firmware answers (or its timeout, `--watchdog-ms`);
//! it allocates nothing per tick. In real time it runs on the control thread: the thread's
//! compute time then includes QEMU's emulation of the handler, which says how fast this host
//! emulates an M4F, not how fast an M4F is (the instruction counts say that).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use control_core::compact::{
    ArmSetupFrame, CompactCommand, CompactError, CompactState, MAX_FRAME_LEN,
};
use control_core::frames::StateFrame;
use control_core::mailbox::{self, Answer};
use control_core::servo::ServoOutput;
use serde::Serialize;

use super::controller::{ArmCommand, ArmController, ArmState, command};
use crate::run::recorder::{LatencyHistogram, LatencyUs};
use crate::run::report::Percentiles;
use crate::run::session::LoopController;

/// The QEMU machine the firmware runs on by default (Cortex-M4F).
pub const MACHINE: &str = "mps2-an386";
/// The machines the firmware's board module fits: `HIL_QEMU_MACHINE` picks one (`mps2-an385`, a
/// Cortex-M3 without an FPU, runs the thumbv7m and thumbv6m builds).
pub const MACHINES: [&str; 2] = ["mps2-an386", "mps2-an385"];

/// The machine to run: `HIL_QEMU_MACHINE` if set (one of [`MACHINES`]), else [`MACHINE`].
pub fn machine() -> Result<&'static str, String> {
    match std::env::var("HIL_QEMU_MACHINE") {
        Err(_) => Ok(MACHINE),
        Ok(m) => MACHINES.into_iter().find(|k| *k == m).ok_or_else(|| {
            format!(
                "HIL_QEMU_MACHINE={m}: not a board the firmware fits (known: {})",
                MACHINES.join(", ")
            )
        }),
    }
}
/// The firmware's target.
pub const TARGET: &str = "thumbv7em-none-eabihf";
/// QEMU's `-icount` shift: 2^6 ns of virtual time per instruction.
const ICOUNT_SHIFT: u32 = 6;
/// The board's RAM QEMU backs with the file (the mailbox is at its base), bytes.
const RAM_LEN: usize = 16 << 20;
/// How long the firmware may take to boot.
const BOOT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the controller runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ControllerIn {
    /// In this process, on the control thread.
    #[default]
    Host,
    /// In Cortex-M firmware under QEMU.
    Firmware,
}

/// The firmware image: `HIL_FIRMWARE` if set, else `firmware/` of this source tree, built (or
/// brought up to date) with cargo first.
pub fn image(quiet: bool) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("HIL_FIRMWARE") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "HIL_FIRMWARE={}: not a file (a firmware image, built from firmware/)",
                path.display()
            ))
        };
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware");
    let manifest = dir.join("Cargo.toml");
    if !manifest.is_file() {
        return Err(format!(
            "no firmware sources at {} (set HIL_FIRMWARE to a built image)",
            dir.display()
        ));
    }
    if !quiet {
        eprintln!("hil: building the firmware ({})", manifest.display());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // From the firmware's folder: cargo reads its target and link flags
    // (firmware/.cargo/config.toml) from the folder it runs in.
    let out = Command::new(cargo)
        .args(["build", "--release", "--quiet", "--bin", "hil-firmware"])
        .arg("--manifest-path")
        .arg(&manifest)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo to build the firmware: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let hint = if stderr.contains("target may not be installed") || stderr.contains(TARGET) {
            format!(" (install the target: rustup target add {TARGET})")
        } else {
            String::new()
        };
        return Err(format!(
            "building the firmware failed{hint}:\n{}",
            stderr.trim_end()
        ));
    }
    let image = dir.join("target").join(TARGET).join("release/hil-firmware");
    Ok(image.canonicalize().unwrap_or(image))
}

/// Why the firmware could not answer.
#[derive(Debug, Clone)]
pub struct Lost(pub String);

/// A running QEMU with the firmware, and the mailbox mapped.
#[derive(Debug)]
struct Mcu {
    child: Child,
    map: *mut u8,
    file: PathBuf,
    sequence: u32,
    buf: [u8; MAX_FRAME_LEN],
    /// How long one answer may take before the firmware is declared hung.
    answer_timeout: Duration,
}

// SAFETY: the mapping is owned by this value alone (behind a Mutex in FirmwareArm); the other
// side of the shared memory is QEMU's guest, synchronised through the mailbox's protocol.
unsafe impl Send for Mcu {}

impl Mcu {
    fn start(image: &Path, machine: &str, answer_timeout: Duration) -> Result<Self, String> {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let dir = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let file = dir.join(format!(
            "hil-mcu-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&file)
            .map_err(|e| format!("cannot create the MCU's RAM file {}: {e}", file.display()))?;
        let fail = |e: String| {
            let _ = std::fs::remove_file(&file);
            e
        };
        f.set_len(RAM_LEN as u64)
            .map_err(|e| fail(format!("cannot size {}: {e}", file.display())))?;
        use std::os::fd::AsRawFd as _;
        // SAFETY: a fresh shared mapping of the mailbox's bytes of a file we opened read-write
        // and sized above; unmapped in Drop.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mailbox::LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(fail(format!(
                "cannot map {}: {}",
                file.display(),
                std::io::Error::last_os_error()
            )));
        }
        let mut cmd = Command::new("qemu-system-arm");
        // SAFETY: prctl(PR_SET_PDEATHSIG) and setpgid are async-signal-safe and touch no memory
        // of the parent; they run in the forked child before exec. QEMU dies with hil, and a
        // Ctrl-C at the terminal reaches hil only (which then ends QEMU itself).
        unsafe {
            use std::os::unix::process::CommandExt as _;
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                    || libc::setpgid(0, 0) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .arg("-machine")
            .arg(format!("{machine},memory-backend=mps.ram"))
            .arg("-object")
            .arg(format!(
                "memory-backend-file,id=mps.ram,size={}M,mem-path={},share=on",
                RAM_LEN >> 20,
                file.display()
            ))
            .args(["-nographic", "-monitor", "none", "-serial", "none"])
            .arg("-icount")
            .arg(format!("shift={ICOUNT_SHIFT},sleep=on"))
            .arg("-kernel")
            .arg(image)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                // SAFETY: the mapping made above, not used after this.
                unsafe { libc::munmap(map, mailbox::LEN) };
                let how = if e.kind() == std::io::ErrorKind::NotFound {
                    "qemu-system-arm is not installed (Debian: apt-get install qemu-system-arm)"
                        .to_owned()
                } else {
                    format!("cannot start qemu-system-arm: {e}")
                };
                return Err(fail(how));
            }
        };
        let mut mcu = Self {
            child,
            map: map.cast(),
            file,
            sequence: 0,
            buf: [0; MAX_FRAME_LEN],
            answer_timeout,
        };
        let start = Instant::now();
        while mcu.word(mailbox::BOOT).load(Ordering::Acquire) != mailbox::MAGIC {
            if let Some(lost) = mcu.check_alive() {
                return Err(format!("the firmware did not boot: {}", lost.0));
            }
            if start.elapsed() > BOOT_TIMEOUT {
                return Err(format!(
                    "the firmware did not boot within {} s",
                    BOOT_TIMEOUT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        // Both sides have it mapped: the name is no longer needed (nothing to clean up later).
        let _ = std::fs::remove_file(&mcu.file);
        Ok(mcu)
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: `offset` is one of mailbox's aligned word offsets, inside the mapping, which
        // lives as long as `self`; the firmware accesses these words only whole.
        unsafe { AtomicU32::from_ptr(self.map.add(offset).cast()) }
    }

    /// QEMU's end or the firmware's fault, if either happened.
    fn check_alive(&mut self) -> Option<Lost> {
        let fault = self.word(mailbox::FAULT).load(Ordering::Acquire);
        if fault != 0 {
            let pc = self.word(mailbox::FAULT_DETAIL).load(Ordering::Acquire);
            let what = match fault {
                mailbox::FAULT_HARD => format!("took a HardFault at pc {pc:#010x}"),
                mailbox::FAULT_PANIC => "panicked".to_owned(),
                other => format!("wrote fault code {other:#x}"),
            };
            return Some(Lost(format!("the firmware {what}")));
        }
        match self.child.try_wait() {
            Ok(Some(status)) => {
                let mut stderr = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut stderr);
                }
                let said = stderr.trim();
                Some(Lost(format!(
                    "QEMU ended ({status}){}",
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", said.lines().last().unwrap_or(said))
                    }
                )))
            }
            Ok(None) => None,
            Err(e) => Some(Lost(format!("cannot wait for QEMU: {e}"))),
        }
    }

    /// Send `request` (a compact frame) and wait for the answer: (answer, detail, response).
    fn exchange(&mut self, request: &[u8]) -> Result<(Answer, u32, &[u8]), Lost> {
        if request.len() > mailbox::AREA_LEN {
            return Err(Lost("request longer than the mailbox's area".to_owned()));
        }
        // SAFETY: the request area lies inside the mapping; the firmware reads it only after
        // the sequence below changes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                request.as_ptr(),
                self.map.add(mailbox::REQUEST),
                request.len(),
            );
        }
        self.word(mailbox::REQUEST_LEN)
            .store(request.len() as u32, Ordering::Release);
        self.sequence = self.sequence.wrapping_add(1).max(1);
        let sequence = self.sequence;
        self.word(mailbox::REQUEST_SEQ)
            .store(sequence, Ordering::Release);
        let start = Instant::now();
        let mut polls = 0u32;
        while self.word(mailbox::RESPONSE_SEQ).load(Ordering::Acquire) != sequence {
            polls += 1;
            if polls < 2_000 {
                std::hint::spin_loop();
                continue;
            }
            if polls.is_multiple_of(64) {
                if let Some(lost) = self.check_alive() {
                    return Err(lost);
                }
                if start.elapsed() > self.answer_timeout {
                    return Err(Lost(format!(
                        "the firmware did not answer within {} ms (hung)",
                        self.answer_timeout.as_millis()
                    )));
                }
            }
            std::thread::sleep(Duration::from_micros(10));
        }
        let answer_code = self.word(mailbox::ANSWER).load(Ordering::Acquire);
        let answer = Answer::from_code(answer_code)
            .ok_or_else(|| Lost(format!("the firmware gave unknown answer {answer_code}")))?;
        let detail = self.word(mailbox::ANSWER_DETAIL).load(Ordering::Acquire);
        let len = self.word(mailbox::RESPONSE_LEN).load(Ordering::Acquire) as usize;
        if len > MAX_FRAME_LEN {
            return Err(Lost(format!("the firmware's answer claims {len} bytes")));
        }
        // SAFETY: the response area lies inside the mapping; the firmware wrote it before the
        // sequence (acquire above) and does not touch it until the next request.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.map.add(mailbox::RESPONSE),
                self.buf.as_mut_ptr(),
                len,
            );
        }
        Ok((answer, detail, self.buf.get(..len).unwrap_or(&[])))
    }

    /// The instructions each phase of the last request took: (decode, control, encode).
    fn instructions(&self) -> [u64; 3] {
        let hz = u64::from(self.word(mailbox::CLOCK_HZ).load(Ordering::Acquire).max(1));
        [
            mailbox::COUNTS_DECODE,
            mailbox::COUNTS_CONTROL,
            mailbox::COUNTS_ENCODE,
        ]
        .map(|w| {
            // counts / hz seconds of virtual time, 2^shift ns per instruction.
            let counts = u64::from(self.word(w).load(Ordering::Acquire));
            (counts * 1_000_000_000 / hz + (1 << (ICOUNT_SHIFT - 1))) >> ICOUNT_SHIFT
        })
    }

    /// Make the firmware take a HardFault now (the fault path's test).
    fn inject_fault(&self) {
        self.word(mailbox::COMMAND)
            .store(mailbox::COMMAND_FAULT, Ordering::Release);
    }
}

impl Drop for Mcu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // SAFETY: the mapping made in `start`, used by nothing after this.
        unsafe { libc::munmap(self.map.cast(), mailbox::LEN) };
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Instructions of one phase over a run: min, mean, max.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Instructions {
    /// Fewest.
    pub min: u64,
    /// Mean.
    pub mean: f64,
    /// Most.
    pub max: u64,
    #[serde(skip)]
    sum: u64,
    #[serde(skip)]
    count: u64,
}

impl Instructions {
    fn record(&mut self, n: u64) {
        self.min = if self.count == 0 { n } else { self.min.min(n) };
        self.max = self.max.max(n);
        self.sum += n;
        self.count += 1;
        self.mean = self.sum as f64 / self.count as f64;
    }
}

/// What the report says of a controller that ran as firmware.
#[derive(Debug, Clone, Serialize)]
pub struct FirmwareReport {
    /// The emulated board.
    pub machine: &'static str,
    /// The image that ran.
    pub image: String,
    /// States the firmware answered (ticks and the safe state).
    pub answered: u64,
    /// Answers whose output differs from the host controller's on the same state, in any bit
    /// (torque, request, gains, status, limit flag).
    pub mismatches: u64,
    /// The first such difference.
    pub first_mismatch: Option<String>,
    /// Per tick: instructions to decode the state frame.
    pub decode_instructions: Instructions,
    /// Per tick: instructions in the controller (sequencing, servo).
    pub control_instructions: Instructions,
    /// Per tick: instructions to encode the answer.
    pub encode_instructions: Instructions,
    /// The whole exchange as this process sees it (write the state, the firmware's SysTick
    /// picks it up, answers; read back), µs.
    pub exchange_us: Option<Percentiles>,
    /// Why the firmware was lost, if it was.
    pub lost: Option<String>,
}

#[derive(Debug)]
struct Shared {
    mcu: Mcu,
    report: FirmwareReport,
    exchange: LatencyHistogram,
    sequence: u32,
}

/// The arm's controller running in firmware, with the host's beside it for comparison.
#[derive(Debug, Clone)]
pub struct FirmwareArm {
    shared: Arc<Mutex<Shared>>,
    host: ArmController,
    /// A HardFault is injected before the tick at this plant step (tests).
    fault_at_step: Option<u64>,
}

impl FirmwareArm {
    /// Start QEMU with `image` and set up the firmware's controller as `host` was set up from
    /// `setup` and `targets`; an answer that takes longer than `answer_timeout` loses it.
    pub fn start(
        image: &Path,
        host: ArmController,
        setup: control_core::arm::ArmSetup,
        targets: &[control_core::arm::ArmTarget],
        answer_timeout: Duration,
    ) -> Result<Self, String> {
        let mut frame = ArmSetupFrame {
            sequence: 0,
            setup,
            targets: heapless::Vec::new(),
        };
        for t in targets {
            frame.targets.push(*t).map_err(|_| {
                format!(
                    "the firmware holds at most {} targets; the scenario has {}",
                    control_core::compact::MAX_TARGETS,
                    targets.len()
                )
            })?;
        }
        let machine = machine()?;
        let mut mcu = Mcu::start(image, machine, answer_timeout)?;
        let mut buf = [0u8; MAX_FRAME_LEN];
        let n = frame
            .encode(&mut buf)
            .map_err(|e| format!("cannot encode the firmware's setup: {e}"))?;
        let (answer, detail, _) = mcu
            .exchange(buf.get(..n).unwrap_or(&[]))
            .map_err(|l| format!("setting up the firmware: {}", l.0))?;
        if answer != Answer::Ok {
            let why = match (answer, detail) {
                (Answer::SetupRefused, 3) => {
                    "this servo is not in this firmware build (an `f32-only` build has the f32 servo only)"
                        .to_owned()
                }
                (Answer::SetupRefused, 1 | 2 | 4) => format!(
                    "the controller refused the setup (code {detail}), which the host's accepted"
                ),
                _ => format!("{answer:?} (detail {detail})"),
            };
            return Err(format!(
                "the firmware refused the controller's setup: {why}"
            ));
        }
        let fault_at_step = std::env::var("HIL_FIRMWARE_FAULT_AT_STEP")
            .ok()
            .and_then(|s| s.parse().ok());
        Ok(Self {
            shared: Arc::new(Mutex::new(Shared {
                mcu,
                report: FirmwareReport {
                    machine,
                    image: image.display().to_string(),
                    answered: 0,
                    mismatches: 0,
                    first_mismatch: None,
                    decode_instructions: Instructions::default(),
                    control_instructions: Instructions::default(),
                    encode_instructions: Instructions::default(),
                    exchange_us: None,
                    lost: None,
                },
                exchange: LatencyHistogram::default(),
                sequence: 0,
            })),
            host,
            fault_at_step,
        })
    }

    /// The report so far (call after the run).
    pub fn report(&self) -> Option<FirmwareReport> {
        let s = self.shared.lock().ok()?;
        let mut r = s.report.clone();
        r.exchange_us = s.exchange.percentiles_us();
        Some(r)
    }

    /// Ask the firmware for `state`'s output (a tick, or the safe state's): `None` once lost.
    fn ask(&self, state: ArmState, safe: bool, host: &ServoOutput) -> Option<ServoOutput> {
        let mut guard = self.shared.lock().ok()?;
        let s = &mut *guard;
        if s.report.lost.is_some() {
            return None;
        }
        if self.fault_at_step == Some(state.step) {
            s.mcu.inject_fault();
        }
        s.sequence = s.sequence.wrapping_add(1);
        let result = exchange_state(s, state, safe);
        match result {
            Ok(out) => {
                s.report.answered += 1;
                if !same_bits(&out, host) {
                    s.report.mismatches += 1;
                    if s.report.first_mismatch.is_none() {
                        s.report.first_mismatch = Some(format!(
                            "step {}: firmware {out:?}, host {host:?}",
                            state.step
                        ));
                    }
                }
                Some(out)
            }
            Err(Lost(reason)) => {
                s.report.lost = Some(format!(
                    "the controller's firmware ({} under QEMU) is lost at step {}: {reason}",
                    s.report.machine, state.step
                ));
                None
            }
        }
    }
}

fn exchange_state(s: &mut Shared, state: ArmState, safe: bool) -> Result<ServoOutput, Lost> {
    let step = u32::try_from(state.step).map_err(|_| {
        Lost(format!(
            "plant step {} beyond the compact frames' u32",
            state.step
        ))
    })?;
    let mut frame = CompactState {
        sequence: s.sequence,
        safe,
        step,
        sim_time_s: state.sim_time_s,
        joints: heapless::Vec::new(),
    };
    let _ = frame.joints.push(state.joint);
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = frame
        .encode(&mut buf)
        .map_err(|e| Lost(format!("cannot encode the state: {e}")))?;
    let started = Instant::now();
    let (answer, detail, response) = s.mcu.exchange(buf.get(..n).unwrap_or(&[]))?;
    let command = match answer {
        Answer::Ok => CompactCommand::decode(response)
            .map_err(|e| Lost(format!("the firmware's answer is not a valid frame: {e}")))?,
        Answer::BadFrame => {
            let why = CompactError::from_code(detail)
                .map_or_else(|| format!("code {detail:#x}"), |e| e.to_string());
            return Err(Lost(format!("the firmware refused the state frame: {why}")));
        }
        other => {
            return Err(Lost(format!(
                "the firmware answered {other:?} (detail {detail})"
            )));
        }
    };
    s.exchange.record_duration(started.elapsed());
    if command.sequence != s.sequence || command.step != step || command.safe != safe {
        return Err(Lost(format!(
            "the firmware answered sequence {} step {} for sequence {} step {step}",
            command.sequence, command.step, s.sequence
        )));
    }
    let [out] = command.outputs.as_slice() else {
        return Err(Lost(format!(
            "the firmware answered {} outputs for one joint",
            command.outputs.len()
        )));
    };
    if !safe {
        let [d, c, e] = s.mcu.instructions();
        s.report.decode_instructions.record(d);
        s.report.control_instructions.record(c);
        s.report.encode_instructions.record(e);
    }
    Ok(*out)
}

/// Whether two outputs are the same to the bit.
fn same_bits(a: &ServoOutput, b: &ServoOutput) -> bool {
    let bits = |o: &ServoOutput| {
        [
            o.torque_nm.to_bits(),
            o.requested_torque_nm.to_bits(),
            o.stiffness_nm_per_rad.to_bits(),
            o.damping_nms_per_rad.to_bits(),
        ]
    };
    let status = |o: &ServoOutput| {
        let (code, detail, value) = control_core::compact::status_code(o.status);
        (code, detail, value.to_bits())
    };
    bits(a) == bits(b) && a.torque_limited == b.torque_limited && status(a) == status(b)
}

impl LoopController for FirmwareArm {
    type State = ArmState;
    type Command = ArmCommand;

    fn state_of(frame: &StateFrame) -> Option<ArmState> {
        ArmState::of(frame)
    }

    fn tick(&mut self, state: ArmState) -> ArmCommand {
        let host = self.host.tick(state);
        match self.ask(state, false, &host.record.output) {
            Some(out) => command(state, out, false),
            // Lost: the session ends the run (`lost`); the host's answer stands in meanwhile.
            None => host,
        }
    }

    fn safe(&self, state: ArmState) -> ArmCommand {
        let host = self.host.safe(state);
        match self.ask(state, true, &host.record.output) {
            Some(out) => command(state, out, true),
            None => host,
        }
    }

    fn lost(&self) -> Option<String> {
        self.shared.lock().ok()?.report.lost.clone()
    }
}
