// SPDX-License-Identifier: MIT
//
// The trainer's data layer: whole datasets loaded into memory as two tensors, from the original file
// formats (IDX for MNIST and Fashion-MNIST, the binary batches of CIFAR-10) or generated ("synthetic",
// the random custom data of the reference Python script). Nothing is ever downloaded: a missing file is a
// DataError that says which names were tried.
//
// Normalization happens in one place: readIdx() and readCifar10Batches() return pixels scaled to [0, 1];
// loadDataset() then standardizes them with the dataset's published constants (normalizationFor()).
// Synthetic data is already standard normal and is left as generated.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rankscope::trainer {

struct Dataset {
    torch::Tensor images; // float32 [N, C, H, W], contiguous
    torch::Tensor labels; // int64 [N], each in [0, classes)
    int64_t classes = 10;
    std::string name;

    int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

struct DatasetSplit {
    Dataset train;
    Dataset test;
};

struct DataOptions {
    std::string name = "synthetic"; // one of datasetNames()
    std::string dir;                // empty: defaultDataDir(name)
    int64_t syntheticTrainSamples = 4096;
    int64_t syntheticTestSamples = 1024;
    int64_t syntheticChannels = 3;
    int64_t syntheticSize = 32;
    uint64_t seed = 2021; // synthetic data only; the test split uses seed + 1
};

// Anything wrong with the data or its files. The message names the file (or the option) and what is wrong.
class DataError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Per-channel standardization constants; one value applies to every channel. Empty: leave data as is.
struct Normalization {
    std::vector<double> mean;
    std::vector<double> stddev;
};

// "synthetic", "fashion-mnist", "mnist", "cifar10": the valid values of --dataset.
std::vector<std::string> datasetNames();

// Where the dataset's files live when no directory is given; "" when there is no default.
std::string defaultDataDir(const std::string& name);

// The published constants for name's [0, 1] pixels; empty for synthetic. Throws DataError for unknown names.
Normalization normalizationFor(const std::string& name);

// Standardizes dataset.images in place: (x - mean[c]) / stddev[c]. Throws DataError when the number of
// constants is neither 1 nor the number of channels.
void normalize(Dataset& dataset, const Normalization& normalization);

// Loads both splits, normalized. Files are looked up in options.dir (or the default directory): IDX files
// under their plain name first, then with ".gz"; CIFAR-10 batches in the directory itself, then in the
// cifar-10-batches-bin/ folder the official archive unpacks to. Throws DataError, also for an unknown name.
DatasetSplit loadDataset(const DataOptions& options);

// One IDX pair (uint8 images of magic 0x00000803, uint8 labels of magic 0x00000801), pixels scaled to
// [0, 1], shape [N, 1, rows, cols]. Gzip files are read when built with RANKSCOPE_WITH_ZLIB.
Dataset readIdx(const std::string& imagesPath, const std::string& labelsPath);

// CIFAR-10 binary batches (records of 1 label byte + 3x32x32 channel-major pixels), concatenated in
// order, pixels scaled to [0, 1], shape [N, 3, 32, 32].
Dataset readCifar10Batches(const std::vector<std::string>& paths);

// images = randn(samples, channels, size, size), then labels = randint(0, classes, samples), both drawn
// from one CPU generator seeded with seed: the same seed gives the same data on every run and rank.
Dataset makeSynthetic(int64_t samples, int64_t channels, int64_t size, int64_t classes, uint64_t seed);

} // namespace rankscope::trainer
