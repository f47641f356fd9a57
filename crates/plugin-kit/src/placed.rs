//! Runs an emulator's hot loop on its state moved to a fixed address.
//!
//! Cranelift keeps few values of a large function in registers. An
//! emulator's run loop is one, and the address of its CPU state (`self`),
//! used by every access to a register or a flag, is then reloaded from the
//! stack frame before most of them. State in a static has a constant
//! address instead: each field is one load or store at a fixed offset from
//! the linear memory's base, with no address to keep in a register.
//! [`run_placed`] moves the state bitwise into such a slot, runs the loop
//! there and moves it back. Outside a component it runs in place: LLVM
//! keeps the address in a register.

#[cfg(target_family = "wasm")]
use std::cell::{Cell, UnsafeCell};
#[cfg(target_family = "wasm")]
use std::mem::MaybeUninit;

/// The largest state [`run_placed`] takes.
pub const SLOT_BYTES: usize = 1024;

/// Where the state is moved for the run.
#[cfg(target_family = "wasm")]
#[repr(C, align(16))]
struct Slot(UnsafeCell<MaybeUninit<[u8; SLOT_BYTES]>>, Cell<bool>);

// SAFETY: a component instance runs on one thread; `run_placed` is the
// slot's only user and refuses to nest.
#[cfg(target_family = "wasm")]
unsafe impl Sync for Slot {}

#[cfg(target_family = "wasm")]
static SLOT: Slot = Slot(UnsafeCell::new(MaybeUninit::uninit()), Cell::new(false));

/// Runs `run` on `state` at a fixed address (in a component; in place
/// elsewhere) and answers what it answers. `run` must not call
/// `run_placed` again (it panics if it does). `T` is at most
/// [`SLOT_BYTES`] bytes and aligned to at most 16.
#[inline(always)]
pub fn run_placed<T, R>(state: &mut T, run: impl FnOnce(&mut T) -> R) -> R {
    #[cfg(target_family = "wasm")]
    {
        const {
            assert!(size_of::<T>() <= SLOT_BYTES && align_of::<T>() <= 16);
        }
        assert!(!SLOT.1.replace(true), "run_placed does not nest");
        let slot = SLOT.0.get().cast::<T>();
        // SAFETY: the slot is large and aligned enough (checked above) and
        // in use by no one else (the flag). The state is moved bitwise
        // into it, run there and moved back; `state` is not used in
        // between (it is borrowed mutably here). A panic in a component
        // traps its instance, which is then rebuilt, so `state` is not
        // used after one either.
        let answer = unsafe {
            std::ptr::copy_nonoverlapping(state as *const T, slot, 1);
            let answer = run(&mut *slot);
            std::ptr::copy_nonoverlapping(slot, state as *mut T, 1);
            answer
        };
        SLOT.1.set(false);
        answer
    }
    #[cfg(not(target_family = "wasm"))]
    run(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_comes_back_changed() {
        let mut state = (vec![1u8, 2], 7u64);
        let sum = run_placed(&mut state, |s| {
            s.0.push(3);
            s.1 += 1;
            s.0.iter().map(|&b| u64::from(b)).sum::<u64>() + s.1
        });
        assert_eq!(sum, 6 + 8);
        assert_eq!(state, (vec![1, 2, 3], 8));
    }
}
