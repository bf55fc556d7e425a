// The Fashion-MNIST classifier of examples/fashion_mnist.cpp as a web page: trains the CNN on the
// CPU (or loads the weights a run saved), captures its inference on WEBGPU with TinyJit, checks
// the replay against the CPU, and exports it (TinyJit::export_webgpu) with a page that classifies
// the first test images in the browser and draws them with their predicted labels.
//
//   web_fashion_mnist OUT_DIR [--weights FILE] [--steps N] [--images N]
//
// FILE (default OUT_DIR/../fashion_mnist.safetensors) holds the trained weights: read when it
// exists, else written after N training steps (default 1000, batch 128; ~90% test accuracy, ~1 minute).
// OUT_DIR gets the exported model, page.js, data.json (the images and their labels) and
// reference.json (the CPU's logits and labels, for tools/web/check_page.py).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <tinyt.hpp>

#include "fashion_mnist_model.hpp"
#include "web_demo.hpp"

using namespace tinyt;

namespace {
const char* const class_names[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                     "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

// The weights after `steps` steps of fashion_mnist.cpp's training (Adam, the same schedule).
std::map<std::string, Tensor> train(const nn::datasets::Mnist& data, int steps, int batch) {
  Tensor::manual_seed(42);
  FashionNet model;
  const auto start = std::chrono::steady_clock::now();
  train_fashion(model, data, steps, batch, [&](int step, const Tensor& loss) {
    if (step % 100 == 0 || step == steps)
      std::printf("training on the CPU: step %d/%d, loss %.4f (%.0f s)\n", step, steps, static_cast<double>(loss.item<float>()),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
  std::printf("test accuracy: %.2f%%\n", test_accuracy(model, data));
  return nn::state::get_state_dict(model);
}

// The network with its tensors on WEBGPU. num_batches_tracked (int64, which WebGPU lacks; only
// training reads it) stays on the CPU.
FashionNet on_webgpu(const FashionNet& cpu) {
  FashionNet g = cpu;  // (the same tensors, until each handle is pointed at a copy)
  auto move = [](Tensor& t) { t = t.to("WEBGPU").realize(); };
  for (nn::Conv2d* c : {&g.conv1, &g.conv2}) move(c->weight), move(c->bias);
  for (nn::BatchNorm* b : {&g.bn1, &g.bn2}) move(b->weight), move(b->bias), move(b->running_mean), move(b->running_var);
  for (nn::Linear* l : {&g.fc, &g.head}) move(l->weight), move(l->bias);
  return g;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) throw Error("usage: web_fashion_mnist OUT_DIR [--weights FILE] [--steps N] [--images N]");
    const std::filesystem::path out = argv[1];
    std::string weights_file = (out.parent_path() / "fashion_mnist.safetensors").string();
    int steps = 1000, images = 16;
    for (int i = 2; i + 1 < argc; i += 2) {
      const std::string flag = argv[i];
      if (flag == "--weights") weights_file = argv[i + 1];
      else if (flag == "--steps") steps = std::atoi(argv[i + 1]);
      else if (flag == "--images") images = std::atoi(argv[i + 1]);
      else throw Error("web_fashion_mnist: unknown option " + flag);
    }
    const nn::datasets::Mnist data = nn::datasets::fashion_mnist();
    std::map<std::string, Tensor> weights;
    if (std::filesystem::exists(weights_file)) {
      weights = nn::state::safe_load(weights_file);
      std::printf("weights: %s\n", weights_file.c_str());
    } else {
      weights = train(data, steps, 128);
      std::filesystem::create_directories(std::filesystem::path(weights_file).parent_path());
      nn::state::safe_save(weights, weights_file);
      std::printf("weights written to %s\n", weights_file.c_str());
    }

    // the CPU's logits for the first test images (eval mode: batchnorm's running statistics)
    FashionNet cpu;
    nn::state::load_state_dict(cpu, weights);
    const Tensor raw = data.X_test[{Slice(0, images)}].contiguous().realize();
    const Tensor x = pixels(raw).contiguous().realize();
    const std::vector<float> want = cpu(x).to_vector<float>();

    // the same network on WEBGPU, its inference captured and replayed
    const FashionNet gpu = on_webgpu(cpu);
    TinyJit infer([&](const Tensor& images_in) { return gpu(images_in); });
    const Tensor x_gpu = x.to("WEBGPU").realize();
    std::vector<float> got;
    const auto start = std::chrono::steady_clock::now();
    for (int call = 0; call < 3; ++call) got = infer(x_gpu).to_vector<float>();  // run, capture, replay
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double w = web_demo::worst(got, want, 1e-4, 1e-4);
    std::printf("WEBGPU (natively, %zu kernels): logits within %.2f of the tolerance of the CPU's (3 calls in %.2f s)\n",
                infer.captured_count(), w, seconds);
    if (!(w <= 1)) throw Error("web_fashion_mnist: WEBGPU's logits differ from the CPU's");

    infer.export_webgpu(out.string(), web_demo::page_script("fashion_mnist.js"));
    const std::vector<int32_t> labels = data.Y_test[{Slice(0, images)}].cast(dtypes::int32).to_vector<int32_t>();
    std::vector<int32_t> predicted;
    for (int i = 0; i < images; ++i) {
      predicted.push_back(static_cast<int32_t>(std::max_element(want.begin() + i * 10, want.begin() + i * 10 + 10) - (want.begin() + i * 10)));
    }
    std::string names = "[";
    for (int c = 0; c < 10; ++c) names += (c ? "," : "") + web_demo::json_string(class_names[c]);
    web_demo::write_text((out / "data.json").string(),
                         "{\"images\": " + web_demo::json_array(x.to_vector<float>()) + ",\n \"labels\": " + web_demo::json_array(labels) +
                             ",\n \"classes\": " + names + "]}\n");
    web_demo::write_text((out / "reference.json").string(),
                         "{\"outputs\": [" + web_demo::json_array(want) + "],\n \"labels\": " + web_demo::json_array(predicted) + "}\n");
    int right = 0;
    for (int i = 0; i < images; ++i) right += labels[static_cast<size_t>(i)] == predicted[static_cast<size_t>(i)];
    std::printf("exported to %s: %d test images, %d classified right on the CPU\n", out.c_str(), images, right);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "web_fashion_mnist: %s\n", e.what());
    return 1;
  }
}
