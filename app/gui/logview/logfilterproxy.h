// SPDX-License-Identifier: MIT
#pragma once

#include "core/logclassify.h"

#include <QRegularExpression>
#include <QSet>
#include <QSortFilterProxyModel>

namespace rankscope::gui {

// Filters a LogModel (or any model with its roles) by rank, minimum severity, a regular expression on
// the text and NCCL lines only. Every criterion left at its default lets all rows through.
class LogFilterProxy final : public QSortFilterProxyModel {
    Q_OBJECT

public:
    explicit LogFilterProxy(QObject* parent = nullptr);

    void setRanks(const QSet<int>& ranks); // empty: every rank
    [[nodiscard]] const QSet<int>& ranks() const { return m_ranks; }
    void setMinimumSeverity(LogSeverity severity);
    [[nodiscard]] LogSeverity minimumSeverity() const { return m_minimumSeverity; }
    // Case-insensitive. An invalid pattern filters nothing and sets patternError(); an empty one matches all.
    void setPattern(const QString& pattern);
    [[nodiscard]] QString pattern() const { return m_pattern.pattern(); }
    [[nodiscard]] const QString& patternError() const { return m_patternError; }
    void setNcclOnly(bool ncclOnly);
    [[nodiscard]] bool ncclOnly() const { return m_ncclOnly; }
    // True when some criterion hides rows.
    [[nodiscard]] bool isFiltering() const;

Q_SIGNALS:
    void patternErrorChanged(const QString& error); // empty when the pattern is valid again

protected:
    [[nodiscard]] bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    QSet<int> m_ranks;
    LogSeverity m_minimumSeverity = LogSeverity::Debug;
    QRegularExpression m_pattern;
    bool m_patternActive = false;
    QString m_patternError;
    bool m_ncclOnly = false;
};

} // namespace rankscope::gui
