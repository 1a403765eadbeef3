//! The device-backed pool: one slab per device, ranges of it as blocks.

use std::sync::{Arc, Mutex};

use c2_cuda::{DeviceBuffer, Gpu};

use crate::{RangeAllocator, VramConfig, VramError};

/// One device's reservation. Blocks return their range when dropped; no
/// driver allocation (and no implicit device synchronisation) happens after
/// [`VramPool::new`].
pub struct VramPool {
    slab: DeviceBuffer<u8>,
    ranges: Mutex<RangeAllocator>,
}

/// A range of a pool's slab.
pub struct VramBlock {
    pool: Arc<VramPool>,
    offset: usize,
    len: usize,
}

impl VramPool {
    /// Reserves the budget `config` gives for `gpu`'s free memory now.
    pub fn new(gpu: &Arc<Gpu>, config: &VramConfig) -> Result<Arc<Self>, VramError> {
        let (free, _) = gpu.memory()?;
        let budget = config.budget(free);
        let ranges = RangeAllocator::new(budget)?;
        let slab = gpu.alloc::<u8>(ranges.budget())?;
        Ok(Arc::new(Self { slab, ranges: Mutex::new(ranges) }))
    }

    /// Bytes reserved.
    pub fn budget(&self) -> usize {
        self.slab.len()
    }

    /// Bytes in use.
    pub fn used(&self) -> usize {
        self.ranges.lock().map(|r| r.used()).unwrap_or(0)
    }

    /// A block of at least `bytes`, or [`VramError::OutOfBudget`].
    pub fn alloc(self: &Arc<Self>, bytes: usize) -> Result<VramBlock, VramError> {
        let (offset, len) = self
            .ranges
            .lock()
            .map_err(|_| VramError::Invalid("VRAM pool poisoned by a panic".into()))?
            .alloc(bytes)?;
        Ok(VramBlock { pool: self.clone(), offset, len })
    }
}

impl VramBlock {
    /// The block's device address (for kernel arguments).
    pub fn device_ptr(&self) -> u64 {
        self.pool.slab.device_ptr() + self.offset as u64
    }

    /// Its size in bytes (the request rounded up to the alignment).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: blocks are at least one aligned unit.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl Drop for VramBlock {
    fn drop(&mut self) {
        if let Ok(mut r) = self.pool.ranges.lock() {
            r.release(self.offset, self.len);
        }
    }
}
