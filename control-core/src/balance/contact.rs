//! Which contact bodies the balance QP plants, from the loads a plant measured.
//!
//! A body is planted while the plant measured a load on it, and for [`ContactHold::hold_ticks`]
//! ticks after. The measurement is a step old: dropping a body from the planted set as soon as it
//! reads unloaded changes the torques that held it, and two feet can then take turns unloading
//! each other tick by tick (on the 15-body humanoid pushed with 16 N·s, that chatter walked both
//! feet 8 cm forward; one tick of hold ends it).
//!
//! Never allocates, blocks or panics.

/// Ticks since a body's last load, for one never loaded.
const NEVER: u32 = u32::MAX;

/// The planted set with a hold of some ticks after each body's last load, for up to `N` bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContactHold<const N: usize> {
    hold_ticks: u32,
    /// Per body: ticks since its last load (at most `NEVER − 1`; [`NEVER`]: never loaded yet).
    unloaded: [u32; N],
}

impl<const N: usize> ContactHold<N> {
    /// No body loaded yet; each stays planted `hold_ticks` ticks after its last load (0: only
    /// while loaded).
    pub const fn new(hold_ticks: u32) -> Self {
        Self {
            hold_ticks,
            unloaded: [NEVER; N],
        }
    }

    /// The ticks a body stays planted after its last load.
    pub const fn hold_ticks(&self) -> u32 {
        self.hold_ticks
    }

    /// One tick: whether each body carried load at the last measurement (body `k` is the `k`-th
    /// item; items past `N` are ignored, bodies past the items count as unloaded); returns
    /// whether each body is planted.
    pub fn tick(&mut self, loaded: impl IntoIterator<Item = bool>) -> [bool; N] {
        let mut loaded = loaded.into_iter();
        let mut planted = [false; N];
        for (p, unloaded) in planted.iter_mut().zip(self.unloaded.iter_mut()) {
            *unloaded = if loaded.next() == Some(true) {
                0
            } else if *unloaded == NEVER {
                NEVER
            } else {
                unloaded.saturating_add(1).min(NEVER - 1)
            };
            *p = *unloaded != NEVER && *unloaded <= self.hold_ticks;
        }
        planted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_stays_planted_for_the_hold_after_its_last_load() {
        let mut c = ContactHold::<2>::new(1);
        // Never loaded: not planted.
        assert_eq!(c.tick([false, false]), [false, false]);
        assert_eq!(c.tick([true, false]), [true, false]);
        // Unloaded for one tick: still planted; for two: not.
        assert_eq!(c.tick([false, true]), [true, true]);
        assert_eq!(c.tick([false, true]), [false, true]);
        // Loaded again: planted at once.
        assert_eq!(c.tick([true, false]), [true, true]);
        assert_eq!(c.tick([true, false]), [true, false]);
    }

    #[test]
    fn no_hold_plants_only_what_is_loaded_and_missing_items_are_unloaded() {
        let mut c = ContactHold::<3>::new(0);
        assert_eq!(c.tick([true, true, true]), [true, true, true]);
        assert_eq!(c.tick([true]), [true, false, false]);
        // Extra items are ignored.
        assert_eq!(c.tick([false, true, true, true]), [false, true, true]);
        assert_eq!(c.hold_ticks(), 0);
    }

    #[test]
    fn the_longest_hold_never_plants_a_body_never_loaded_and_does_not_overflow() {
        let mut c = ContactHold::<2>::new(u32::MAX);
        assert_eq!(c.tick([false, true]), [false, true]);
        for _ in 0..3 {
            assert_eq!(c.tick([false, false]), [false, true]);
        }
        // Counting up to the cap stays below "never".
        if let Some(u) = c.unloaded.get_mut(1) {
            *u = NEVER - 2;
        }
        for _ in 0..3 {
            assert_eq!(c.tick([false, false]), [false, true]);
        }
    }
}
