// SPDX-License-Identifier: MIT
#include "datasets.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

#ifdef RANKSCOPE_WITH_ZLIB
#include <zlib.h>
#endif

namespace rankscope::trainer {

namespace {

using Bytes = std::vector<uint8_t>;

constexpr uint32_t kIdxImagesMagic = 0x00000803;
constexpr uint32_t kIdxLabelsMagic = 0x00000801;
constexpr size_t kIdxImagesHeader = 16; // magic, count, rows, cols
constexpr size_t kIdxLabelsHeader = 8;  // magic, count
constexpr int64_t kClasses = 10;
constexpr int64_t kCifarSide = 32;
constexpr int64_t kCifarChannels = 3;
constexpr size_t kCifarPixels = kCifarChannels * kCifarSide * kCifarSide;
constexpr size_t kCifarRecord = 1 + kCifarPixels;

std::string hex32(uint32_t value) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08X", value);
    return text;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
    std::string joined;
    for (const std::string& part : parts) {
        joined += (joined.empty() ? "" : separator) + part;
    }
    return joined;
}

DataError unknownDataset(const std::string& name) {
    return DataError("unknown --dataset '" + name + "', valid values: " + join(datasetNames(), ", "));
}

void requireExists(const std::string& path) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) {
        throw DataError(path + ": file not found");
    }
}

#ifdef RANKSCOPE_WITH_ZLIB
struct GzCloser {
    void operator()(gzFile file) const { gzclose(file); }
};

// gzread passes plain files through unchanged, so one reader serves both.
Bytes readFileBytes(const std::string& path) {
    requireExists(path);
    std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
    if (!file) {
        throw DataError(path + ": cannot open: " + std::strerror(errno));
    }
    gzbuffer(file.get(), 1u << 20);
    constexpr unsigned kChunk = 1u << 22;
    Bytes data;
    size_t used = 0;
    for (;;) {
        data.resize(used + kChunk);
        const int got = gzread(file.get(), data.data() + used, kChunk);
        if (got <= 0) {
            int code = Z_OK;
            const char* message = gzerror(file.get(), &code);
            // A gzip stream cut short reads as end of file with Z_BUF_ERROR pending.
            if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
                throw DataError(path + ": read failed, the gzip data is truncated or corrupt (" + message + ")");
            }
            break;
        }
        used += static_cast<size_t>(got);
    }
    data.resize(used);
    return data;
}
#else
bool endsWith(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Bytes readFileBytes(const std::string& path) {
    requireExists(path);
    if (endsWith(path, ".gz")) {
        throw DataError(path + ": is gzip-compressed, but the trainer was built without zlib; "
                               "decompress it with gunzip or rebuild with zlib");
    }
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) {
        throw DataError(path + ": cannot open: " + std::strerror(errno));
    }
    Bytes data(static_cast<size_t>(in.tellg()));
    in.seekg(0);
    if (!in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()))) {
        throw DataError(path + ": read failed");
    }
    return data;
}
#endif

uint32_t bigEndian32(const uint8_t* bytes) {
    return uint32_t{bytes[0]} << 24 | uint32_t{bytes[1]} << 16 | uint32_t{bytes[2]} << 8 | uint32_t{bytes[3]};
}

std::string sizeText(uint64_t expected, uint64_t got) {
    return "expected " + std::to_string(expected) + " bytes, got " + std::to_string(got);
}

// Validates an IDX file of unsigned bytes and returns its dimensions; the payload follows the header.
std::vector<int64_t> parseIdxHeader(const Bytes& data, const std::string& path, uint32_t magic) {
    const size_t dims = magic & 0xFF;
    const size_t headerBytes = 4 + 4 * dims;
    if (data.size() < 4) {
        throw DataError(path + ": truncated header, " + sizeText(headerBytes, data.size()));
    }
    const uint32_t found = bigEndian32(data.data());
    if (found != magic) {
        // Without zlib a compressed file renamed to the plain name ends up here.
        const bool gzip = data[0] == 0x1F && data[1] == 0x8B;
        throw DataError(path + ": wrong magic number, expected " + hex32(magic) + ", found " + hex32(found) +
                        (gzip ? " (the file is gzip-compressed)" : ""));
    }
    if (data.size() < headerBytes) {
        throw DataError(path + ": truncated header, " + sizeText(headerBytes, data.size()));
    }
    std::vector<int64_t> shape;
    uint64_t payload = 1;
    for (size_t i = 0; i < dims; ++i) {
        const uint32_t extent = bigEndian32(data.data() + 4 + 4 * i);
        // Three 32-bit extents can overflow 64 bits; no real file comes near, so treat it as damage.
        if (extent != 0 && payload > std::numeric_limits<uint64_t>::max() / extent) {
            throw DataError(path + ": header declares an impossible size");
        }
        payload *= extent;
        shape.push_back(extent);
    }
    const uint64_t got = data.size() - headerBytes;
    if (got < payload) {
        throw DataError(path + ": truncated payload, " + sizeText(payload, got));
    }
    if (got > payload) {
        throw DataError(path + ": payload longer than the header declares, " + sizeText(payload, got));
    }
    return shape;
}

void checkLabels(const uint8_t* labels, size_t count, size_t stride, const std::string& path) {
    for (size_t i = 0; i < count; ++i) {
        const uint8_t label = labels[i * stride];
        if (label >= kClasses) {
            throw DataError(path + ": label " + std::to_string(label) + " of sample " + std::to_string(i) +
                            " is out of range [0, " + std::to_string(kClasses) + ")");
        }
    }
}

// Float pixels in [0, 1], written in one pass: sample i's bytes start at data[first + i * stride]. Loading is
// bound by gunzip and page faults, so a plain loop does as well here as at::parallel_for.
torch::Tensor unitPixels(const Bytes& data, size_t first, size_t stride, const std::vector<int64_t>& shape) {
    torch::Tensor pixels = torch::empty(shape, torch::kFloat32);
    const auto samples = static_cast<size_t>(shape[0]);
    const size_t sampleBytes = samples == 0 ? 0 : static_cast<size_t>(pixels.numel()) / samples;
    float* out = pixels.data_ptr<float>();
    for (size_t i = 0; i < samples; ++i) {
        const uint8_t* in = data.data() + first + i * stride;
        for (size_t k = 0; k < sampleBytes; ++k) {
            *out++ = static_cast<float>(in[k]) / 255.0f;
        }
    }
    return pixels;
}

torch::Tensor byteTensor(const Bytes& data, size_t offset, std::vector<int64_t> shape) {
    return torch::from_blob(const_cast<uint8_t*>(data.data() + offset), shape, torch::kUInt8);
}

Bytes concatenateCifarBatches(const std::vector<std::string>& paths) {
    Bytes all;
    for (const std::string& path : paths) {
        const Bytes batch = readFileBytes(path);
        if (batch.size() % kCifarRecord != 0) {
            throw DataError(path + ": truncated or not a CIFAR-10 binary batch, its size of " +
                            std::to_string(batch.size()) + " bytes is not a multiple of the " +
                            std::to_string(kCifarRecord) + "-byte record");
        }
        checkLabels(batch.data(), batch.size() / kCifarRecord, kCifarRecord, path);
        all.insert(all.end(), batch.begin(), batch.end());
    }
    return all;
}

std::string findFile(const std::string& dir, const std::vector<std::string>& candidates, const std::string& what) {
    std::vector<std::string> tried;
    for (const std::string& candidate : candidates) {
        const std::string path = (std::filesystem::path(dir) / candidate).string();
        std::error_code error;
        if (std::filesystem::is_regular_file(path, error)) {
            return path;
        }
        tried.push_back(path);
    }
    throw DataError(what + " not found, tried " + join(tried, ", "));
}

std::string idxFile(const std::string& dir, const std::string& base) {
    return findFile(dir, {base, base + ".gz"}, "IDX file " + base);
}

std::string cifarFile(const std::string& dir, const std::string& base) {
    return findFile(dir, {base, "cifar-10-batches-bin/" + base}, "CIFAR-10 batch " + base);
}

std::string dataDir(const DataOptions& options) {
    const std::string dir = options.dir.empty() ? defaultDataDir(options.name) : options.dir;
    if (dir.empty()) {
        throw DataError("--dataset " + options.name + ": no data directory given and the dataset has no default one");
    }
    return dir;
}

DatasetSplit loadIdxSplit(const DataOptions& options) {
    const std::string dir = dataDir(options);
    // One lookup per statement, so that a missing file is reported in this order.
    const std::string trainImages = idxFile(dir, "train-images-idx3-ubyte");
    const std::string trainLabels = idxFile(dir, "train-labels-idx1-ubyte");
    const std::string testImages = idxFile(dir, "t10k-images-idx3-ubyte");
    const std::string testLabels = idxFile(dir, "t10k-labels-idx1-ubyte");
    DatasetSplit split;
    split.train = readIdx(trainImages, trainLabels);
    split.test = readIdx(testImages, testLabels);
    return split;
}

DatasetSplit loadCifarSplit(const DataOptions& options) {
    const std::string dir = dataDir(options);
    std::vector<std::string> trainPaths;
    for (int batch = 1; batch <= 5; ++batch) {
        trainPaths.push_back(cifarFile(dir, "data_batch_" + std::to_string(batch) + ".bin"));
    }
    DatasetSplit split;
    split.train = readCifar10Batches(trainPaths);
    split.test = readCifar10Batches({cifarFile(dir, "test_batch.bin")});
    return split;
}

DatasetSplit loadSyntheticSplit(const DataOptions& options) {
    DatasetSplit split;
    split.train = makeSynthetic(options.syntheticTrainSamples, options.syntheticChannels, options.syntheticSize,
                                kClasses, options.seed);
    split.test = makeSynthetic(options.syntheticTestSamples, options.syntheticChannels, options.syntheticSize, kClasses,
                               options.seed + 1);
    return split;
}

void requireAtLeast(const char* what, int64_t value, int64_t minimum) {
    if (value < minimum) {
        throw DataError(std::string("synthetic data: ") + what + " must be >= " + std::to_string(minimum) + ", got " +
                        std::to_string(value));
    }
}

} // namespace

std::vector<std::string> datasetNames() {
    return {"synthetic", "fashion-mnist", "mnist", "cifar10"};
}

std::string defaultDataDir(const std::string& name) {
    if (name == "fashion-mnist") {
        return "/usr/share/datasets/fashion-mnist";
    }
    return {};
}

Normalization normalizationFor(const std::string& name) {
    if (name == "synthetic") {
        return {};
    }
    if (name == "mnist") {
        return {{0.1307}, {0.3081}};
    }
    if (name == "fashion-mnist") {
        return {{0.2860}, {0.3530}};
    }
    if (name == "cifar10") {
        return {{0.4914, 0.4822, 0.4465}, {0.2470, 0.2435, 0.2616}};
    }
    throw unknownDataset(name);
}

void normalize(Dataset& dataset, const Normalization& normalization) {
    const size_t constants = normalization.mean.size();
    if (constants == 0) {
        return;
    }
    const int64_t channels = dataset.images.size(1);
    if (normalization.stddev.size() != constants || (constants != 1 && static_cast<int64_t>(constants) != channels)) {
        throw DataError(dataset.name + ": " + std::to_string(constants) + " normalization constants for " +
                        std::to_string(channels) + " channels");
    }
    if (constants == 1) {
        dataset.images.sub_(normalization.mean[0]).div_(normalization.stddev[0]);
        return;
    }
    for (int64_t c = 0; c < channels; ++c) {
        const auto k = static_cast<size_t>(c);
        dataset.images.select(1, c).sub_(normalization.mean[k]).div_(normalization.stddev[k]);
    }
}

DatasetSplit loadDataset(const DataOptions& options) {
    DatasetSplit split;
    if (options.name == "synthetic") {
        split = loadSyntheticSplit(options);
    } else if (options.name == "mnist" || options.name == "fashion-mnist") {
        split = loadIdxSplit(options);
    } else if (options.name == "cifar10") {
        split = loadCifarSplit(options);
    } else {
        throw unknownDataset(options.name);
    }
    const Normalization normalization = normalizationFor(options.name);
    for (Dataset* dataset : {&split.train, &split.test}) {
        dataset->name = options.name;
        normalize(*dataset, normalization);
    }
    return split;
}

Dataset readIdx(const std::string& imagesPath, const std::string& labelsPath) {
    const Bytes images = readFileBytes(imagesPath);
    const std::vector<int64_t> imageShape = parseIdxHeader(images, imagesPath, kIdxImagesMagic);
    const Bytes labels = readFileBytes(labelsPath);
    const std::vector<int64_t> labelShape = parseIdxHeader(labels, labelsPath, kIdxLabelsMagic);
    const int64_t count = imageShape[0];
    if (labelShape[0] != count) {
        throw DataError("image/label count mismatch: " + imagesPath + " holds " + std::to_string(count) +
                        " images but " + labelsPath + " holds " + std::to_string(labelShape[0]) + " labels");
    }
    checkLabels(labels.data() + kIdxLabelsHeader, static_cast<size_t>(count), 1, labelsPath);
    Dataset dataset;
    const auto imageBytes = static_cast<size_t>(imageShape[1] * imageShape[2]);
    dataset.images = unitPixels(images, kIdxImagesHeader, imageBytes, {count, 1, imageShape[1], imageShape[2]});
    dataset.labels = byteTensor(labels, kIdxLabelsHeader, {count}).to(torch::kInt64);
    return dataset;
}

Dataset readCifar10Batches(const std::vector<std::string>& paths) {
    if (paths.empty()) {
        throw DataError("no CIFAR-10 batch files given");
    }
    const Bytes records = concatenateCifarBatches(paths);
    const auto count = static_cast<int64_t>(records.size() / kCifarRecord);
    const torch::Tensor table = byteTensor(records, 0, {count, static_cast<int64_t>(kCifarRecord)});
    Dataset dataset;
    dataset.images = unitPixels(records, 1, kCifarRecord, {count, kCifarChannels, kCifarSide, kCifarSide});
    dataset.labels = table.select(1, 0).to(torch::kInt64, false, false, torch::MemoryFormat::Contiguous);
    return dataset;
}

Dataset makeSynthetic(int64_t samples, int64_t channels, int64_t size, int64_t classes, uint64_t seed) {
    requireAtLeast("samples", samples, 0);
    requireAtLeast("channels", channels, 1);
    requireAtLeast("size", size, 1);
    requireAtLeast("classes", classes, 1);
    auto generator = at::detail::createCPUGenerator(seed);
    Dataset dataset;
    dataset.images = torch::randn({samples, channels, size, size}, generator, torch::kFloat32);
    dataset.labels = torch::randint(0, classes, {samples}, generator, torch::kInt64);
    dataset.classes = classes;
    dataset.name = "synthetic";
    return dataset;
}

} // namespace rankscope::trainer
