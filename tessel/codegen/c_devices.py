"""The device runtime of the generated C (issue 27), emitted after the prelude into a file whose
code uses it (`tessel_dev_` names): the ahead-of-time main of a model planned on a second device.

"ext_dev" is a stand-in accelerator: it runs the same C code but owns its memory, the blocks
`tessel_dev_alloc` hands out, registered here with their device; any other address is host
memory. The main allocates each device's arena here, checks that every pointer a kernel gets is
its device's (a value that crosses devices without a device_copy is then an error at run time,
not silent sharing), and copies through `tessel_dev_copy`, which checks both sides and counts.
The exported `tessel_device_*` functions serve the executor (tessel.runtime.devices).
"""

from __future__ import annotations

from tessel.codegen.c_prelude import ALIGNMENT

USES_DEVICES = "tessel_dev_"  # the prefix of the runtime's internal names

_RUNTIME = r"""
/* The device runtime (tessel/codegen/c_devices.py). */
#define TESSEL_DEVICE_CPU 1
#define TESSEL_DEVICE_BLOCKS 256

typedef struct {
  char* start;
  size_t nbytes;
  int32_t device_type;
  int32_t device_id;
} tessel_dev_block;

static tessel_dev_block tessel_dev_blocks[TESSEL_DEVICE_BLOCKS];
static int tessel_dev_lock_word = 0;
static uint64_t tessel_dev_copy_count = 0;
static uint64_t tessel_dev_copy_bytes = 0;

static inline void tessel_dev_lock(void) {
  while (__atomic_exchange_n(&tessel_dev_lock_word, 1, __ATOMIC_ACQUIRE)) {
  }
}

static inline void tessel_dev_unlock(void) {
  __atomic_store_n(&tessel_dev_lock_word, 0, __ATOMIC_RELEASE);
}

static inline void* tessel_dev_alloc(int32_t device_type, int32_t device_id, size_t nbytes) {
  if (device_type == TESSEL_DEVICE_CPU) return tessel_workspace_alloc(nbytes);
  size_t usable = (nbytes / @ALIGNMENT@ + 1) * @ALIGNMENT@;
  char* block = (char*)aligned_alloc(@ALIGNMENT@, usable);
  if (block == NULL) return NULL;
  tessel_dev_lock();
  for (int k = 0; k < TESSEL_DEVICE_BLOCKS; ++k) {
    if (tessel_dev_blocks[k].start == NULL) {
      tessel_dev_block entry = {block, usable, device_type, device_id};
      tessel_dev_blocks[k] = entry;
      tessel_dev_unlock();
      return block;
    }
  }
  tessel_dev_unlock();
  free(block);
  return NULL;
}

static inline void tessel_dev_free(int32_t device_type, void* pointer) {
  if (pointer == NULL) return;
  if (device_type == TESSEL_DEVICE_CPU) {
    tessel_workspace_free(pointer);
    return;
  }
  tessel_dev_lock();
  for (int k = 0; k < TESSEL_DEVICE_BLOCKS; ++k) {
    if (tessel_dev_blocks[k].start == (char*)pointer) tessel_dev_blocks[k].start = NULL;
  }
  tessel_dev_unlock();
  free(pointer);
}

/* Whether [pointer, pointer + nbytes) is memory of device (type, id): inside one of its blocks,
   or, for the CPU, inside none of any device's. */
static inline bool tessel_dev_holds(int32_t device_type, int32_t device_id,
                                    const void* pointer, size_t nbytes) {
  const char* start = (const char*)pointer;
  bool inside = false, held = device_type == TESSEL_DEVICE_CPU;
  tessel_dev_lock();
  for (int k = 0; k < TESSEL_DEVICE_BLOCKS && !inside; ++k) {
    const tessel_dev_block* block = &tessel_dev_blocks[k];
    if (block->start != NULL && start >= block->start && start < block->start + block->nbytes) {
      inside = true;
      held = block->device_type == device_type && block->device_id == device_id &&
             start + nbytes <= block->start + block->nbytes;
    }
  }
  tessel_dev_unlock();
  return held;
}

static inline bool tessel_dev_copy(void* target, int32_t dst_type, int32_t dst_id,
                                   const void* source, int32_t src_type, int32_t src_id,
                                   size_t nbytes) {
  if (!tessel_dev_holds(src_type, src_id, source, nbytes)) return false;
  if (!tessel_dev_holds(dst_type, dst_id, target, nbytes)) return false;
  memcpy(target, source, nbytes);
  __atomic_fetch_add(&tessel_dev_copy_count, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&tessel_dev_copy_bytes, (uint64_t)nbytes, __ATOMIC_RELAXED);
  return true;
}

/* For the executor (tessel.runtime.devices): constants uploaded once, and the copy counters. */
TESSEL_EXPORT void* tessel_device_upload(int32_t device_type, int32_t device_id,
                                         const void* data, size_t nbytes) {
  void* block = tessel_dev_alloc(device_type, device_id, nbytes);
  if (block != NULL) memcpy(block, data, nbytes);
  return block;
}

TESSEL_EXPORT void tessel_device_release(int32_t device_type, void* pointer) {
  tessel_dev_free(device_type, pointer);
}

TESSEL_EXPORT uint64_t tessel_device_copies(void) {
  return __atomic_load_n(&tessel_dev_copy_count, __ATOMIC_RELAXED);
}

TESSEL_EXPORT uint64_t tessel_device_copied_bytes(void) {
  return __atomic_load_n(&tessel_dev_copy_bytes, __ATOMIC_RELAXED);
}

"""

DEVICE_RUNTIME = _RUNTIME.replace("@ALIGNMENT@", str(ALIGNMENT)).strip()


def needs_device_runtime(code: str) -> bool:
    """Whether generated C `code` calls the device runtime."""
    return USES_DEVICES in code


__all__ = ["DEVICE_RUNTIME", "needs_device_runtime"]
