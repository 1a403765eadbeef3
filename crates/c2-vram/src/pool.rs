//! The device-backed pool: one slab per device, ranges of it as the memory
//! of [`DeviceBuffer`]s.

use std::sync::Arc;
use std::time::Duration;

use c2_cuda::{DeviceArena, DeviceBuffer, DeviceMemory, Gpu, GpuError};

use crate::{SharedBudget, VramConfig, VramError};

/// CUDA_ERROR_OUT_OF_MEMORY.
const OUT_OF_MEMORY: i32 = 2;

/// One device's reservation. No driver allocation (and no implicit device
/// synchronisation) happens after [`VramPool::new`]: every buffer of the
/// stages that take [`VramPool::memory`] is a range of the slab, returned
/// when the buffer drops.
pub struct VramPool {
    gpu: Arc<Gpu>,
    slab: Arc<DeviceBuffer<u8>>,
    ranges: Arc<SharedBudget>,
    wait: Duration,
}

/// A range of a pool's slab, held by a [`DeviceBuffer`] as its lease; it
/// keeps the slab alive as long as the buffer lives.
struct Lease {
    ranges: Arc<SharedBudget>,
    _slab: Arc<DeviceBuffer<u8>>,
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
                Err(GpuError::Driver { code: OUT_OF_MEMORY, .. }) if tries < 4 => {
                    tries += 1;
                    budget -= budget / 20;
                }
                Err(e) => return Err(e.into()),
            }
        };
        Ok(Arc::new(Self { gpu: gpu.clone(), slab: Arc::new(slab), ranges: Arc::new(ranges), wait: config.wait }))
    }

    /// Bytes reserved.
    pub fn budget(&self) -> usize {
        self.slab.len()
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

impl DeviceArena for VramPool {
    fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    fn reserve(&self, bytes: usize) -> Result<(u64, Box<dyn Send + Sync>), GpuError> {
        let (offset, len) = self.ranges.take(bytes, self.wait)?;
        let lease = Lease { ranges: self.ranges.clone(), _slab: self.slab.clone(), offset, len };
        Ok((self.slab.device_ptr() + offset as u64, Box::new(lease)))
    }

    fn largest_free(&self) -> usize {
        self.ranges.largest_free()
    }
}
