// SPDX-License-Identifier: MIT
#include "rankgrid.h"

#include "rankgridmodel.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QResizeEvent>
#include <QSortFilterProxyModel>
#include <QStyledItemDelegate>

#include <algorithm>
#include <cmath>

namespace rankscope::gui {

namespace {

constexpr int kSpacing = 6;
constexpr int kMinTileWidth = 72;
constexpr int kMinTileHeight = 40;
constexpr int kMaxTileWidth = 230;
constexpr int kMaxTileHeight = 78;
constexpr int kRoomForHost = 60; // below this height a tile leaves the host out

class TileDelegate final : public QStyledItemDelegate {
public:
    TileDelegate(const int* focusedRank, const int* hoveredRank, const QSize* tileSize, QObject* parent)
        : QStyledItemDelegate(parent), m_focusedRank(focusedRank), m_hoveredRank(hoveredRank), m_tileSize(tileSize) {}

    QSize sizeHint(const QStyleOptionViewItem&, const QModelIndex&) const override { return *m_tileSize; }

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        const auto cell = [&](int column, int role = Qt::DisplayRole) {
            return index.siblingAtColumn(column).data(role);
        };
        const int rank = index.data(RankGridModel::RankRole).toInt();
        const QColor fill = index.data(Qt::BackgroundRole).value<QColor>();
        const bool focused = rank == *m_focusedRank;
        const QRectF box = QRectF(option.rect).adjusted(1.5, 1.5, -1.5, -1.5);

        painter->save();
        painter->setRenderHint(QPainter::Antialiasing);
        QPainterPath path;
        path.addRoundedRect(box, 5, 5);
        painter->fillPath(path, fill);
        if (focused)
            painter->setPen(QPen(QColor(0x20, 0x20, 0x20), 3.0));
        else if (rank == *m_hoveredRank)
            painter->setPen(QPen(QColor(0x20, 0x20, 0x20), 2.0, Qt::DashLine));
        else
            painter->setPen(QPen(fill.darker(135), 1.0));
        painter->drawPath(path);

        const int padding = option.rect.width() < 110 ? 5 : 8;
        const QRect text = option.rect.adjusted(padding, 4, -padding, -4);
        QFont bold = option.font;
        bold.setBold(true);
        const QFontMetrics boldMetrics(bold);
        const int lineHeight = boldMetrics.height();
        painter->setPen(QColor(0x1a, 0x1a, 0x1a));
        painter->setFont(bold);
        painter->drawText(QRect(text.left(), text.top(), text.width(), lineHeight), Qt::AlignLeft | Qt::AlignVCenter,
                          QStringLiteral("%1").arg(rank));
        QFont small = option.font;
        painter->setFont(small);
        const QFontMetrics metrics(small);
        // A narrow tile leaves the state word out rather than overlap the rank: the colour still says it.
        const QString state = cell(RankGridModel::StateColumn).toString();
        if (boldMetrics.horizontalAdvance(QString::number(rank)) + metrics.horizontalAdvance(state) + 6 <= text.width())
            painter->drawText(QRect(text.left(), text.top(), text.width(), lineHeight),
                              Qt::AlignRight | Qt::AlignVCenter, state);

        int y = text.top() + lineHeight;
        if (option.rect.height() >= kRoomForHost) {
            const QString host =
                metrics.elidedText(cell(RankGridModel::HostColumn).toString(), Qt::ElideMiddle, text.width());
            painter->setPen(QColor(0x3a, 0x3a, 0x3a));
            painter->drawText(QRect(text.left(), y, text.width(), metrics.height()), Qt::AlignLeft, host);
            y += metrics.height();
        }
        // The longest form that fits: step and loss, then the step alone, then the bare number.
        const QString loss = cell(RankGridModel::LossColumn).toString();
        const QString step = cell(RankGridModel::StepColumn).toString();
        QString line = QStringLiteral("step %1").arg(step);
        if (!loss.isEmpty() && metrics.horizontalAdvance(line + QStringLiteral(" · ") + loss) <= text.width())
            line += QStringLiteral(" · ") + loss;
        else if (metrics.horizontalAdvance(line) > text.width())
            line = step;
        painter->setPen(QColor(0x1a, 0x1a, 0x1a));
        painter->drawText(QRect(text.left(), y, text.width(), metrics.height()), Qt::AlignLeft,
                          metrics.elidedText(line, Qt::ElideRight, text.width()));
        painter->restore();
    }

private:
    const int* m_focusedRank;
    const int* m_hoveredRank;
    const QSize* m_tileSize;
};

} // namespace

RankGrid::RankGrid(RankGridModel* model, QWidget* parent)
    : QListView(parent), m_model(model), m_proxy(new QSortFilterProxyModel(this)) {
    m_proxy->setSourceModel(model);
    m_proxy->setSortRole(RankGridModel::SortRole);
    m_proxy->sort(RankGridModel::RankColumn);
    m_proxy->setDynamicSortFilter(true);
    setModel(m_proxy);
    setItemDelegate(new TileDelegate(&m_focusedRank, &m_hoveredRank, &m_tileSize, this));
    setViewMode(QListView::IconMode);
    setFlow(QListView::LeftToRight);
    setWrapping(true);
    setResizeMode(QListView::Adjust);
    setMovement(QListView::Static);
    setUniformItemSizes(true);
    setSelectionMode(QAbstractItemView::NoSelection);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setFrameShape(QFrame::NoFrame);
    setMouseTracking(true);
    viewport()->setAutoFillBackground(false);
    connect(this, &QListView::clicked, this,
            [this](const QModelIndex& index) { emit rankSelected(index.data(RankGridModel::RankRole).toInt()); });
    connect(m_proxy, &QAbstractItemModel::rowsInserted, this, &RankGrid::relayoutTiles);
    connect(m_proxy, &QAbstractItemModel::modelReset, this, &RankGrid::relayoutTiles);
    relayoutTiles();
}

void RankGrid::setFocusedRank(int rank) {
    if (rank == m_focusedRank)
        return;
    m_focusedRank = rank;
    viewport()->update();
}

void RankGrid::setHoveredRank(int rank) {
    if (rank == m_hoveredRank)
        return;
    m_hoveredRank = rank;
    viewport()->update();
}

void RankGrid::mouseMoveEvent(QMouseEvent* event) {
    QListView::mouseMoveEvent(event);
    const QModelIndex index = indexAt(event->position().toPoint());
    const int rank = index.isValid() ? index.data(RankGridModel::RankRole).toInt() : -1;
    if (rank != m_pointedRank) {
        m_pointedRank = rank;
        emit rankPointed(rank);
    }
}

void RankGrid::leaveEvent(QEvent* event) {
    QListView::leaveEvent(event);
    if (m_pointedRank >= 0) {
        m_pointedRank = -1;
        emit rankPointed(-1);
    }
}

QRect RankGrid::tileRect(int rank) const {
    const int row = m_model->rowOfRank(rank);
    if (row < 0)
        return {};
    return visualRect(m_proxy->mapFromSource(m_model->index(row, 0)));
}

void RankGrid::resizeEvent(QResizeEvent* event) {
    QListView::resizeEvent(event);
    relayoutTiles();
}

// The column count that gives the largest tiles with every rank visible; the minimum size, scrolling, when
// even that does not fit.
void RankGrid::relayoutTiles() {
    const int count = std::max(m_model->rowCount(), 1);
    const QSize area = viewport()->size() - QSize(3 * kSpacing, kSpacing); // QListView wraps a little early
    QSize best(kMinTileWidth, kMinTileHeight);
    double bestScore = -1.0;
    for (int columns = 1; columns <= count; ++columns) {
        const int rows = (count + columns - 1) / columns;
        const int width = std::min(area.width() / columns - kSpacing, kMaxTileWidth);
        const int height = std::min(area.height() / rows - kSpacing, kMaxTileHeight);
        if (width < kMinTileWidth || height < kMinTileHeight)
            continue;
        const double score = std::min(double(width) / kMaxTileWidth, double(height) / kMaxTileHeight);
        if (score > bestScore) {
            bestScore = score;
            best = QSize(width, std::min(height, width / 2));
        }
    }
    best.setHeight(std::max(best.height(), kMinTileHeight));
    if (best != m_tileSize) {
        m_tileSize = best;
        setGridSize(best + QSize(kSpacing, kSpacing));
        scheduleDelayedItemsLayout();
    }
}

} // namespace rankscope::gui
