//! The device-backed pool: one slab per device, ranges of it as the memory
//! of [`DeviceBuffer`]s.

use std::sync::Arc;
use std::time::Duration;

use c2_cuda::{DeviceArena, DeviceMemory, DriverError, Gpu, GpuError};

use crate::{SharedBudget, VramConfig, VramError};

/// One device's reservation. No driver allocation (and no implicit device
/// synchronisation) happens after [`VramPool::new`]: every buffer of the
/// stages that take [`VramPool::memory`] is a range of the slab, returned
/// when the buffer drops.
pub struct VramPool {
    gpu: Arc<Gpu>,
    /// Device address of the pool's first byte.
    base: u64,
    /// What keeps the memory alive: the slab (a device's pool) or the
    /// parent pool's lease (a carved pool, [`VramPool::carve`]).
    backing: Arc<dyn Send + Sync>,
    ranges: Arc<SharedBudget>,
    wait: Duration,
}

/// A range of a pool, held by a [`DeviceBuffer`] as its lease; it keeps
/// the pool's memory alive as long as the buffer lives.
struct Lease {
    ranges: Arc<SharedBudget>,
    _backing: Arc<dyn Send + Sync>,
    offset: usize,
    len: usize,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.ranges.give(self.offset, self.len);
    }
}

impl VramPool {
    /// Reserves the budget `config` gives for `gpu`'s free memory now. When
    /// the driver cannot map that much in one piece, asks for 5 % less, up
    /// to four times, before giving up.
    pub fn new(gpu: &Arc<Gpu>, config: &VramConfig) -> Result<Arc<Self>, VramError> {
        let (free, _) = gpu.memory()?;
        let mut budget = config.budget(free);
        let mut tries = 0;
        let (slab, ranges) = loop {
            let ranges = SharedBudget::new(budget)?;
            match gpu.alloc::<u8>(ranges.budget()) {
                Ok(slab) => break (slab, ranges),
                Err(GpuError::Driver { error: DriverError::OutOfMemory, .. }) if tries < 4 => {
                    tries += 1;
                    budget -= budget / 20;
                }
                Err(e) => return Err(e.into()),
            }
        };
        let base = slab.device_ptr();
        Ok(Arc::new(Self {
            gpu: gpu.clone(),
            base,
            backing: Arc::new(slab),
            ranges: Arc::new(ranges),
            wait: config.wait,
        }))
    }

    /// A pool of its own over `bytes` of this one (taken now, returned when
    /// the carved pool and every buffer from it are gone): an arena for one
    /// purpose (a worker's partition vectors, its MSM scratch) that other
    /// users of this pool can neither take from nor fragment. Requests that
    /// do not fit the carved pool fail at once (nobody else returns its
    /// ranges).
    pub fn carve(self: &Arc<Self>, bytes: usize) -> Result<Arc<Self>, VramError> {
        let (offset, len) = self.ranges.take(bytes, Duration::ZERO)?;
        let lease = Lease { ranges: self.ranges.clone(), _backing: self.backing.clone(), offset, len };
        Ok(Arc::new(Self {
            gpu: self.gpu.clone(),
            base: self.base + offset as u64,
            backing: Arc::new(lease),
            ranges: Arc::new(SharedBudget::new(len)?),
            wait: Duration::ZERO,
        }))
    }

    /// Bytes reserved.
    pub fn budget(&self) -> usize {
        self.ranges.budget()
    }

    /// Bytes in use.
    pub fn used(&self) -> usize {
        self.ranges.used()
    }

    /// The memory source for stages: buffers are ranges of this pool.
    pub fn memory(self: &Arc<Self>) -> DeviceMemory {
        DeviceMemory::arena(self.clone())
    }
}

// SAFETY: ranges of the slab allocated on `gpu` in `new` (kept alive by each
// lease's `_backing`), handed out by `ranges` to one lease at a time.
unsafe impl DeviceArena for VramPool {
    fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    fn reserve(&self, bytes: usize) -> Result<(u64, Box<dyn Send + Sync>), GpuError> {
        let (offset, len) = self.ranges.take(bytes, self.wait)?;
        let lease = Lease { ranges: self.ranges.clone(), _backing: self.backing.clone(), offset, len };
        Ok((self.base + offset as u64, Box::new(lease)))
    }

    fn largest_free(&self) -> usize {
        self.ranges.largest_free()
    }
}
