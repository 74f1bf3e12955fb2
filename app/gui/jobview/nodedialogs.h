// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"

#include <QDialog>
#include <QStringList>
#include <QVector>

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QSpinBox;

namespace rankscope::gui {

// "Add node…": one node's connection and size, validated as parseJob would validate the job with it added.
class NodeDialog final : public QDialog {
    Q_OBJECT

public:
    explicit NodeDialog(const JobSpec& job, QWidget* parent = nullptr);

    [[nodiscard]] NodeSpec node() const;
    [[nodiscard]] QVector<JobIssue> issues() const { return m_issues; }

    // The issues parseJob finds in job with node appended, only those of that node ("nodes[N].port").
    [[nodiscard]] static QVector<JobIssue> nodeIssues(const JobSpec& job, const NodeSpec& node);

private:
    void validate();

    JobSpec m_job;
    QLineEdit* m_host = nullptr;
    QLineEdit* m_name = nullptr;
    QSpinBox* m_port = nullptr;
    QLineEdit* m_user = nullptr;
    QLineEdit* m_identity = nullptr;
    QLineEdit* m_address = nullptr;
    QLineEdit* m_workDir = nullptr;
    QSpinBox* m_gpus = nullptr;
    QSpinBox* m_procs = nullptr;
    QLabel* m_problems = nullptr;
    QDialogButtonBox* m_buttons = nullptr;
    QVector<JobIssue> m_issues;
};

// "From ~/.ssh/config…": the config's host aliases to tick; those the job already has are shown, not offered.
class SshHostsDialog final : public QDialog {
    Q_OBJECT

public:
    SshHostsDialog(const QStringList& aliases, const QStringList& existingHosts, QWidget* parent = nullptr);
    [[nodiscard]] QStringList chosen() const;

private:
    QListWidget* m_list = nullptr;
};

} // namespace rankscope::gui
