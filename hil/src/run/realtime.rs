//! Real-time mode (being wired to the runtime's periodic thread).
use super::arm::ArmController;
use super::report::ControllerRun;
/// Settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Control period, s.
    pub period_s: f64,
    /// Priority.
    pub priority: u8,
    /// CPU.
    pub cpu: Option<usize>,
    /// Watchdog ticks.
    pub watchdog_ticks: u32,
    /// End, s.
    pub end_s: f64,
}
/// Run.
pub fn run<T: transport::FrameTransport>(
    _name: &'static str,
    _balls: usize,
    _controller: ArmController,
    _link: &T,
    _settings: Settings,
    _progress: impl FnMut(f64),
) -> Result<ControllerRun, Box<dyn std::error::Error>> {
    Err("real-time mode is not wired yet".into())
}
