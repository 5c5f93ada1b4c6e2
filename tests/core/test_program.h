// test_program.h - verified programs for the C++ tests: an image kept
// alive with its view, and the one-node REDUCE program most tests need.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../kmod/core/cad_core.h"

namespace cad_test {

// The image of a description, verified with the default limits.
struct Program {
  explicit Program(const cad_image_desc &d) : image((cad_image_size(&d) + 7) / 8) {
    size = static_cast<uint32_t>(cad_image_size(&d));
    EXPECT_EQ(cad_image_write(&d, image.data(), image.size() * 8), 0);
    char msg[512];
    cad_log log;
    cad_log_init(&log, msg, sizeof(msg));
    rc = cad_verify(image.data(), size, nullptr, &prog, &log);
    message = msg;
  }
  std::vector<uint64_t> image;
  uint32_t size = 0;
  cad_prog prog{};
  int rc = 0;
  std::string message;
};

// inout = op(inout, in) over `bytes`: buffer 1 is inout, buffer 0 is in;
// a built-in op, or user op 0 with the given code.
class OneReduce {
 public:
  OneReduce(uint64_t bytes, unsigned op, unsigned dtype) { Init(bytes, op, dtype); }
  OneReduce(uint64_t bytes, const cad_vm_insn *code, uint32_t n_code, uint32_t elem_size) {
    uop_.elem_size = elem_size;
    uop_.code_count = n_code;
    uop_.line = CAD_NO_LINE;
    desc_.ops = &uop_;
    desc_.n_ops = 1;
    desc_.code = code;
    desc_.n_code = n_code;
    Init(bytes, CAD_OP_USER, CAD_DT_USER);
  }

  void Run(void *inout, const void *in) {
    ASSERT_EQ(program_->rc, 0) << program_->message;
    cad_reduce(&program_->prog, &program_->prog.nodes[0], inout, in, scratch_.data());
  }

 private:
  void Init(uint64_t bytes, unsigned op, unsigned dtype) {
    bufs_[0] = {CAD_BUF_SEND, CAD_ACC_READ, bytes, 0, 0};
    bufs_[1] = {CAD_BUF_RECV, CAD_ACC_READ | CAD_ACC_WRITE, bytes, 0, 0};
    node_.kind = CAD_NODE_REDUCE;
    node_.op = static_cast<__u8>(op);
    node_.dtype = static_cast<__u8>(dtype);
    node_.dst_buf = 1;
    node_.len = bytes;
    node_.line = CAD_NO_LINE;
    desc_.nranks = 1;
    desc_.buffers = bufs_;
    desc_.n_buffers = 2;
    desc_.nodes = &node_;
    desc_.n_nodes = 1;
    program_ = std::make_unique<Program>(desc_);
  }

  cad_buffer bufs_[2]{};
  cad_node node_{};
  cad_user_op uop_{};
  cad_image_desc desc_{};
  std::unique_ptr<Program> program_;
  std::vector<uint64_t> scratch_ = std::vector<uint64_t>(CAD_VM_SCRATCH_SIZE / 8);
};

}  // namespace cad_test
