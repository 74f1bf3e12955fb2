// SPDX-License-Identifier: MIT
//
// The data layer: tiny files written in each format are read back exactly, every kind of damage is a
// DataError that names the file, and the real Fashion-MNIST loads when the machine has it.
#include "datasets.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#ifdef RANKSCOPE_WITH_ZLIB
#include <zlib.h>
#endif

namespace rankscope::trainer {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// ---- writing files in the original formats ---------------------------------------------------------------

void appendBigEndian32(Bytes& out, uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) {
        out.push_back(static_cast<uint8_t>(value >> shift));
    }
}

// A distinct, position-dependent byte so that any reordering shows up.
uint8_t pixelByte(size_t i) {
    return static_cast<uint8_t>((i * 37 + 11) % 256);
}

Bytes idxImages(uint32_t count, uint32_t rows, uint32_t cols, uint32_t magic = 0x00000803) {
    Bytes out;
    appendBigEndian32(out, magic);
    appendBigEndian32(out, count);
    appendBigEndian32(out, rows);
    appendBigEndian32(out, cols);
    for (size_t i = 0; i < size_t{count} * rows * cols; ++i) {
        out.push_back(pixelByte(i));
    }
    return out;
}

Bytes idxLabels(const std::vector<uint8_t>& labels, uint32_t magic = 0x00000801) {
    Bytes out;
    appendBigEndian32(out, magic);
    appendBigEndian32(out, static_cast<uint32_t>(labels.size()));
    out.insert(out.end(), labels.begin(), labels.end());
    return out;
}

constexpr size_t kCifarPixels = 3 * 32 * 32;

// Record r's pixel k is pixelByte(r * kCifarPixels + k + offset).
Bytes cifarBatch(const std::vector<uint8_t>& labels, size_t offset = 0) {
    Bytes out;
    for (size_t r = 0; r < labels.size(); ++r) {
        out.push_back(labels[r]);
        for (size_t k = 0; k < kCifarPixels; ++k) {
            out.push_back(pixelByte(r * kCifarPixels + k + offset));
        }
    }
    return out;
}

Bytes truncated(Bytes bytes, size_t drop) {
    bytes.resize(bytes.size() - drop);
    return bytes;
}

std::string writeFile(const fs::path& path, const Bytes& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path.string();
}

#ifdef RANKSCOPE_WITH_ZLIB
std::string writeGzip(const fs::path& path, const Bytes& bytes) {
    fs::create_directories(path.parent_path());
    gzFile file = gzopen(path.string().c_str(), "wb");
    if (file == nullptr) {
        ADD_FAILURE() << "cannot write " << path;
        return path.string();
    }
    EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(file);
    return path.string();
}
#endif

// Expected [0, 1] pixels of an IDX or CIFAR payload, built independently of the reader.
torch::Tensor expectedPixels(std::vector<int64_t> shape, size_t offset = 0) {
    torch::Tensor bytes = torch::empty(shape, torch::kFloat32);
    float* data = bytes.data_ptr<float>();
    for (int64_t i = 0; i < bytes.numel(); ++i) {
        data[i] = static_cast<float>(pixelByte(static_cast<size_t>(i) + offset)) / 255.0f;
    }
    return bytes;
}

torch::Tensor labelTensor(const std::vector<int64_t>& labels) {
    return torch::tensor(labels, torch::kInt64);
}

DataOptions optionsFor(const std::string& name, const std::string& dir = {}) {
    DataOptions options;
    options.name = name;
    options.dir = dir;
    return options;
}

class TempDirTest : public testing::Test {
protected:
    void SetUp() override {
        std::string pattern = (fs::temp_directory_path() / "rankscope-datasets-XXXXXX").string();
        ASSERT_NE(mkdtemp(pattern.data()), nullptr);
        m_dir = pattern;
    }
    void TearDown() override {
        std::error_code ignored;
        fs::remove_all(m_dir, ignored);
    }
    fs::path m_dir;
};

// ---- reading well-formed files ---------------------------------------------------------------------------

using DatasetFilesTest = TempDirTest;

TEST_F(DatasetFilesTest, ReadsPlainIdx) {
    const std::string images = writeFile(m_dir / "images", idxImages(3, 2, 4));
    const std::string labels = writeFile(m_dir / "labels", idxLabels({0, 9, 3}));
    const Dataset dataset = readIdx(images, labels);
    EXPECT_EQ(dataset.images.sizes(), torch::IntArrayRef({3, 1, 2, 4}));
    EXPECT_EQ(dataset.images.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(dataset.images.is_contiguous());
    EXPECT_TRUE(torch::equal(dataset.images, expectedPixels({3, 1, 2, 4})));
    EXPECT_EQ(dataset.labels.scalar_type(), torch::kInt64);
    EXPECT_TRUE(torch::equal(dataset.labels, labelTensor({0, 9, 3})));
    EXPECT_EQ(dataset.size(), 3);
    EXPECT_EQ(dataset.classes, 10);
}

#ifdef RANKSCOPE_WITH_ZLIB
TEST_F(DatasetFilesTest, ReadsGzipIdx) {
    const std::string images = writeGzip(m_dir / "images.gz", idxImages(5, 3, 3));
    const std::string labels = writeGzip(m_dir / "labels.gz", idxLabels({1, 2, 3, 4, 5}));
    const Dataset dataset = readIdx(images, labels);
    EXPECT_TRUE(torch::equal(dataset.images, expectedPixels({5, 1, 3, 3})));
    EXPECT_TRUE(torch::equal(dataset.labels, labelTensor({1, 2, 3, 4, 5})));
}

TEST_F(DatasetFilesTest, LoadDatasetPrefersPlainFilesThenGzipAndNormalizes) {
    writeFile(m_dir / "train-images-idx3-ubyte", idxImages(4, 2, 2));
    writeGzip(m_dir / "train-images-idx3-ubyte.gz", idxImages(1, 2, 2)); // shadowed by the plain file
    writeFile(m_dir / "train-labels-idx1-ubyte", idxLabels({0, 1, 2, 3}));
    writeGzip(m_dir / "t10k-images-idx3-ubyte.gz", idxImages(2, 2, 2));
    writeGzip(m_dir / "t10k-labels-idx1-ubyte.gz", idxLabels({7, 8}));
    DataOptions options;
    options.name = "mnist";
    options.dir = m_dir.string();
    const DatasetSplit split = loadDataset(options);
    EXPECT_EQ(split.train.name, "mnist");
    EXPECT_TRUE(torch::allclose(split.train.images, (expectedPixels({4, 1, 2, 2}) - 0.1307) / 0.3081, 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(split.test.images, (expectedPixels({2, 1, 2, 2}) - 0.1307) / 0.3081, 1e-5, 1e-6));
    EXPECT_TRUE(torch::equal(split.test.labels, labelTensor({7, 8})));
}
#endif

TEST_F(DatasetFilesTest, ReadsCifarBatchesInOrder) {
    const std::string first = writeFile(m_dir / "a.bin", cifarBatch({3, 0}));
    const std::string second = writeFile(m_dir / "b.bin", cifarBatch({9}, 2 * kCifarPixels));
    const Dataset dataset = readCifar10Batches({first, second});
    EXPECT_EQ(dataset.images.sizes(), torch::IntArrayRef({3, 3, 32, 32}));
    EXPECT_TRUE(dataset.images.is_contiguous());
    // Channel-major records: byte 1 + c*1024 + y*32 + x is pixel (c, y, x).
    EXPECT_TRUE(torch::equal(dataset.images, expectedPixels({3, 3, 32, 32})));
    EXPECT_TRUE(torch::equal(dataset.labels, labelTensor({3, 0, 9})));
}

TEST_F(DatasetFilesTest, LoadDatasetFindsCifarInArchiveFolderAndNormalizesPerChannel) {
    const fs::path folder = m_dir / "cifar-10-batches-bin";
    for (int batch = 1; batch <= 5; ++batch) {
        writeFile(folder / ("data_batch_" + std::to_string(batch) + ".bin"),
                  cifarBatch({static_cast<uint8_t>(batch)}, static_cast<size_t>(batch - 1) * kCifarPixels));
    }
    writeFile(folder / "test_batch.bin", cifarBatch({4, 5}));
    DataOptions options;
    options.name = "cifar10";
    options.dir = m_dir.string();
    const DatasetSplit split = loadDataset(options);
    EXPECT_TRUE(torch::equal(split.train.labels, labelTensor({1, 2, 3, 4, 5})));
    const torch::Tensor mean = torch::tensor({0.4914f, 0.4822f, 0.4465f}).view({1, 3, 1, 1});
    const torch::Tensor stddev = torch::tensor({0.2470f, 0.2435f, 0.2616f}).view({1, 3, 1, 1});
    EXPECT_TRUE(torch::allclose(split.train.images, (expectedPixels({5, 3, 32, 32}) - mean) / stddev, 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(split.test.images, (expectedPixels({2, 3, 32, 32}) - mean) / stddev, 1e-5, 1e-5));
}

// ---- damaged files ---------------------------------------------------------------------------------------

struct DamageCase {
    std::string name;
    std::function<void(const fs::path& dir)> act; // writes files, then calls a reader that must throw
    std::vector<std::string> keywords;            // "{dir}" stands for the temporary directory
};

void PrintTo(const DamageCase& c, std::ostream* out) {
    *out << c.name;
}

void idxPair(const fs::path& dir, const Bytes& images, const Bytes& labels) {
    readIdx(writeFile(dir / "images", images), writeFile(dir / "labels", labels));
}

std::vector<DamageCase> damageCases() {
    const Bytes images = idxImages(3, 2, 4);
    const Bytes labels = idxLabels({0, 1, 2});
    std::vector<DamageCase> cases = {
        {"MissingFile",
         [](const fs::path& d) { readIdx((d / "nope").string(), (d / "nope2").string()); },
         {"{dir}/nope", "not found"}},
        {"MissingInDirectoryListsTriedNames",
         [](const fs::path& d) { loadDataset(optionsFor("fashion-mnist", d.string())); },
         {"{dir}/train-images-idx3-ubyte", "{dir}/train-images-idx3-ubyte.gz", "not found"}},
        {"WrongImageMagic",
         [=](const fs::path& d) { idxPair(d, idxImages(3, 2, 4, 0x00000801), labels); },
         {"{dir}/images", "wrong magic", "expected 0x00000803", "found 0x00000801"}},
        {"WrongLabelMagic",
         [=](const fs::path& d) {
             idxPair(d, images, idxLabels({0, 1, 2}, 0x00000803));
         },
         {"{dir}/labels", "wrong magic", "expected 0x00000801", "found 0x00000803"}},
        {"TruncatedImageHeader",
         [=](const fs::path& d) { idxPair(d, Bytes(images.begin(), images.begin() + 10), labels); },
         {"{dir}/images", "truncated header", "expected 16 bytes, got 10"}},
        {"TruncatedLabelHeader",
         [=](const fs::path& d) { idxPair(d, images, Bytes(labels.begin(), labels.begin() + 6)); },
         {"{dir}/labels", "truncated header", "expected 8 bytes, got 6"}},
        {"TruncatedImagePayload",
         [=](const fs::path& d) { idxPair(d, truncated(images, 5), labels); },
         {"{dir}/images", "truncated payload", "expected 24 bytes, got 19"}},
        {"TruncatedLabelPayload",
         [=](const fs::path& d) { idxPair(d, images, truncated(labels, 1)); },
         {"{dir}/labels", "truncated payload", "expected 3 bytes, got 2"}},
        {"CountMismatch",
         [=](const fs::path& d) {
             idxPair(d, images, idxLabels({0, 1}));
         },
         {"{dir}/images", "{dir}/labels", "count mismatch", "3 images", "2 labels"}},
        {"LabelOutOfRange",
         [=](const fs::path& d) {
             idxPair(d, images, idxLabels({0, 10, 2}));
         },
         {"{dir}/labels", "label 10", "sample 1", "out of range"}},
        {"CifarMissing",
         [](const fs::path& d) { loadDataset(optionsFor("cifar10", d.string())); },
         {"{dir}/data_batch_1.bin", "{dir}/cifar-10-batches-bin/data_batch_1.bin", "not found"}},
        {"CifarTruncated",
         [](const fs::path& d) {
             readCifar10Batches({writeFile(d / "b.bin", truncated(cifarBatch({1, 2}), 100))});
         },
         {"{dir}/b.bin", "truncated", "6046 bytes", "not a multiple of the 3073-byte record"}},
        {"CifarLabelOutOfRange",
         [](const fs::path& d) {
             readCifar10Batches({writeFile(d / "b.bin", cifarBatch({1, 200}))});
         },
         {"{dir}/b.bin", "label 200", "sample 1", "out of range"}},
    };
#ifdef RANKSCOPE_WITH_ZLIB
    cases.push_back({"TruncatedGzip",
                     [=](const fs::path& d) {
                         writeGzip(d / "full.gz", images);
                         std::ifstream in(d / "full.gz", std::ios::binary);
                         const Bytes gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                         readIdx(writeFile(d / "images.gz", truncated(gz, 12)), writeFile(d / "labels", labels));
                     },
                     {"{dir}/images.gz", "truncated or corrupt"}});
#else
    cases.push_back(
        {"GzipWithoutZlib",
         [=](const fs::path& d) { readIdx(writeFile(d / "i.gz", images), writeFile(d / "labels", labels)); },
         {"{dir}/i.gz", "built without zlib"}});
#endif
    return cases;
}

std::string expand(std::string text, const fs::path& dir) {
    const std::string marker = "{dir}";
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker)) {
        text.replace(at, marker.size(), dir.string());
    }
    return text;
}

class DamagedFileTest : public TempDirTest, public testing::WithParamInterface<DamageCase> {};

TEST_P(DamagedFileTest, ThrowsDataErrorNamingFileAndProblem) {
    try {
        GetParam().act(m_dir);
        FAIL() << "no DataError";
    } catch (const DataError& error) {
        const std::string message = error.what();
        for (const std::string& keyword : GetParam().keywords) {
            EXPECT_NE(message.find(expand(keyword, m_dir)), std::string::npos)
                << "missing \"" << expand(keyword, m_dir) << "\" in: " << message;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Damage, DamagedFileTest, testing::ValuesIn(damageCases()),
                         [](const testing::TestParamInfo<DamageCase>& info) { return info.param.name; });

// ---- names, defaults, synthetic data ---------------------------------------------------------------------

TEST(DatasetOptionsTest, UnknownNameListsValidValues) {
    try {
        loadDataset(optionsFor("imagenet"));
        FAIL() << "no DataError";
    } catch (const DataError& error) {
        const std::string message = error.what();
        for (const char* keyword : {"--dataset", "imagenet", "synthetic", "fashion-mnist", "mnist", "cifar10"}) {
            EXPECT_NE(message.find(keyword), std::string::npos) << keyword << " missing in: " << message;
        }
    }
}

TEST(DatasetOptionsTest, DefaultDirectories) {
    EXPECT_EQ(defaultDataDir("fashion-mnist"), "/usr/share/datasets/fashion-mnist");
    EXPECT_EQ(defaultDataDir("synthetic"), "");
    EXPECT_EQ(defaultDataDir("nonsense"), "");
}

TEST(DatasetOptionsTest, PublishedNormalizationConstants) {
    EXPECT_EQ(normalizationFor("mnist").mean, std::vector<double>{0.1307});
    EXPECT_EQ(normalizationFor("fashion-mnist").stddev, std::vector<double>{0.3530});
    EXPECT_EQ(normalizationFor("cifar10").stddev, (std::vector<double>{0.2470, 0.2435, 0.2616}));
    EXPECT_TRUE(normalizationFor("synthetic").mean.empty());
}

TEST(DatasetOptionsTest, NormalizeRejectsMismatchedConstants) {
    Dataset dataset = makeSynthetic(2, 3, 4, 10, 0);
    EXPECT_THROW(normalize(dataset, {{0.1, 0.2}, {1.0, 1.0}}), DataError);
}

TEST(SyntheticDataTest, DeterministicPerSeed) {
    const Dataset a = makeSynthetic(64, 3, 8, 10, 5);
    const Dataset b = makeSynthetic(64, 3, 8, 10, 5);
    const Dataset c = makeSynthetic(64, 3, 8, 10, 6);
    EXPECT_EQ(a.images.sizes(), torch::IntArrayRef({64, 3, 8, 8}));
    EXPECT_EQ(a.labels.scalar_type(), torch::kInt64);
    EXPECT_TRUE(torch::equal(a.images, b.images));
    EXPECT_TRUE(torch::equal(a.labels, b.labels));
    EXPECT_FALSE(torch::equal(a.images, c.images));
    EXPECT_GE(a.labels.min().item<int64_t>(), 0);
    EXPECT_LT(a.labels.max().item<int64_t>(), 10);
}

TEST(SyntheticDataTest, LoadDatasetUsesSeedAndSeedPlusOne) {
    DataOptions options;
    options.syntheticTrainSamples = 32;
    options.syntheticTestSamples = 16;
    options.syntheticChannels = 1;
    options.syntheticSize = 5;
    options.seed = 11;
    const DatasetSplit split = loadDataset(options);
    EXPECT_TRUE(torch::equal(split.train.images, makeSynthetic(32, 1, 5, 10, 11).images));
    EXPECT_TRUE(torch::equal(split.test.labels, makeSynthetic(16, 1, 5, 10, 12).labels));
    EXPECT_EQ(split.test.name, "synthetic");
}

TEST(SyntheticDataTest, RejectsBadSizes) {
    EXPECT_THROW(makeSynthetic(4, 0, 8, 10, 0), DataError);
    EXPECT_THROW(makeSynthetic(-1, 3, 8, 10, 0), DataError);
}

// ---- the real Fashion-MNIST ------------------------------------------------------------------------------

TEST(RealDataTest, FashionMnistLoadsNormalized) {
    const std::string dir = defaultDataDir("fashion-mnist");
    if (!fs::exists(fs::path(dir) / "train-images-idx3-ubyte") &&
        !fs::exists(fs::path(dir) / "train-images-idx3-ubyte.gz")) {
        GTEST_SKIP() << "no Fashion-MNIST in " << dir;
    }
#ifndef RANKSCOPE_WITH_ZLIB
    GTEST_SKIP() << "built without zlib";
#endif
    const auto start = std::chrono::steady_clock::now();
    const DatasetSplit split = loadDataset(optionsFor("fashion-mnist"));
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    RecordProperty("load_seconds", std::to_string(took.count()));
    EXPECT_EQ(split.train.images.sizes(), torch::IntArrayRef({60000, 1, 28, 28}));
    EXPECT_EQ(split.train.labels.sizes(), torch::IntArrayRef({60000}));
    EXPECT_EQ(split.test.images.sizes(), torch::IntArrayRef({10000, 1, 28, 28}));
    EXPECT_EQ(split.test.labels.sizes(), torch::IntArrayRef({10000}));
    EXPECT_GE(split.train.labels.min().item<int64_t>(), 0);
    EXPECT_LT(split.train.labels.max().item<int64_t>(), 10);
    EXPECT_LT(std::abs(split.train.images.mean().item<double>()), 0.05);
    EXPECT_NEAR(split.train.images.std().item<double>(), 1.0, 0.05);
}

} // namespace
} // namespace rankscope::trainer
